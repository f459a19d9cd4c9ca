/** Black-box: /img/{uuid}/{spec} — every spec decoded with sharp, no upscaling, cache, errors, limits. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { adminSite } from "./helpers/site";
import { upload } from "./helpers/media";

type S = Awaited<ReturnType<typeof adminSite>>;
/** JSON answers, checked field by field. */
type Envelope = Record<string, any>;

async function webp(res: Response) {
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("image/webp");
  const m = await sharp(new Uint8Array(await res.arrayBuffer())).metadata();
  expect(m.format).toBe("webp");
  return { width: m.width, height: m.height };
}

/** A PNG whose header claims 30000x30000 pixels but whose data is tiny: a decompression bomb. */
async function bombPng(): Promise<Uint8Array> {
  const png = new Uint8Array(await sharp({ create: { width: 1, height: 1, channels: 3, background: "white" } }).png().toBuffer());
  const view = new DataView(png.buffer);
  view.setUint32(16, 30000);
  view.setUint32(20, 30000);
  view.setUint32(29, Bun.hash.crc32(png.subarray(12, 29)));
  return png;
}

let s: S;
let photo: string; // stored 1200x800 with EXIF orientation 6: displayed 800x1200 (portrait)
let wide: string; // PNG 400x100
let text: string;
beforeAll(async () => {
  s = await adminSite();
  const jpeg = await sharp({ create: { width: 1200, height: 800, channels: 3, background: { r: 200, g: 30, b: 30 } } })
    .jpeg().withMetadata({ orientation: 6 }).toBuffer();
  photo = await upload(s, jpeg, "photo.jpg", "image/jpeg");
  wide = await upload(s, await sharp({ create: { width: 400, height: 100, channels: 4, background: "#00ff0080" } }).png().toBuffer(), "wide.png", "image/png");
  text = await upload(s, new TextEncoder().encode("not an image"), "a.txt", "text/plain");
});
afterAll(() => s.cleanup());

describe("specs", () => {
  test.each([
    ["400w", 400, 600],
    ["300h", 200, 300],
    ["300x300f", 200, 300],
    ["300x300c", 300, 300],
    ["500x200c", 500, 200],
  ])("photo %s -> %ix%i (EXIF orientation applied)", async (spec, w, h) => {
    expect(await webp(await fetch(`${s.base}/img/${photo}/${spec}`))).toEqual({ width: w, height: h });
  });

  test.each([
    ["4000w", 800, 1200],
    ["4000h", 800, 1200],
    ["4000x4000f", 800, 1200],
    ["2000x1000c", 800, 400],
    ["1000x1000c", 800, 800],
  ])("never enlarged: photo %s -> %ix%i", async (spec, w, h) => {
    expect(await webp(await fetch(`${s.base}/img/${photo}/${spec}`))).toEqual({ width: w, height: h });
  });

  test("a PNG with alpha converts too", async () => {
    expect(await webp(await fetch(`${s.base}/img/${wide}/200w`))).toEqual({ width: 200, height: 50 });
    expect(await webp(await fetch(`${s.base}/img/${wide}/50x50c`))).toEqual({ width: 50, height: 50 });
  });

  test("the cover crop is centred", async () => {
    const two = await sharp({ create: { width: 300, height: 100, channels: 3, background: "blue" } })
      .composite([{ input: { create: { width: 100, height: 100, channels: 3, background: "red" } }, left: 100, top: 0 }])
      .png().toBuffer();
    const uuid = await upload(s, two, "centre.png", "image/png");
    const res = await fetch(`${s.base}/img/${uuid}/100x100c`);
    const { data } = await sharp(new Uint8Array(await res.arrayBuffer())).raw().toBuffer({ resolveWithObject: true });
    expect(data[0]).toBeGreaterThan(200); // red in the corner: the middle third was kept
    expect(data[2]).toBeLessThan(60);
  });
});

describe("cache", () => {
  test("made once, then served from disk with ETag and an immutable Cache-Control", async () => {
    const first = await fetch(`${s.base}/img/${photo}/120w`);
    const bytes = new Uint8Array(await first.arrayBuffer());
    const file = join(s.dir, "data/files/cache", photo, "120w.webp");
    expect(new Uint8Array(readFileSync(file))).toEqual(bytes);
    const etag = first.headers.get("etag")!;
    expect(etag).toBe(`"${photo}-120w"`);
    expect(first.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    const second = await fetch(`${s.base}/img/${photo}/120w`);
    expect(second.headers.get("etag")).toBe(etag);
    expect(new Uint8Array(await second.arrayBuffer())).toEqual(bytes);
    const again = await fetch(`${s.base}/img/${photo}/120w`, { headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe("");
  });

  test("simultaneous requests for one new variant all succeed and make one file", async () => {
    const answers = await Promise.all(Array.from({ length: 8 }, () => fetch(`${s.base}/img/${photo}/77w`)));
    const bodies = await Promise.all(answers.map(async (r) => Buffer.from(await r.arrayBuffer()).toString("base64")));
    expect(answers.map((r) => r.status)).toEqual(Array(8).fill(200));
    expect(new Set(bodies).size).toBe(1);
    expect(readdirSync(join(s.dir, "data/files/cache", photo)).filter((f) => f.startsWith("77w"))).toEqual(["77w.webp"]);
  });
});

describe("errors", () => {
  test.each(["abc", "0w", "0800w", "5000w", "100x0c", "100x100z", "100"])("invalid spec %p: 400", async (spec) => {
    const res = await fetch(`${s.base}/img/${photo}/${spec}`);
    expect(res.status).toBe(400);
    expect(((await res.json()) as Envelope).message).toBe("INVALID_DATA");
  });

  test("unknown uuid: 404", async () => {
    expect((await fetch(`${s.base}/img/${"f".repeat(32)}/100w`)).status).toBe(404);
    expect((await fetch(`${s.base}/img/nope/100w`)).status).toBe(404);
  });

  test("not an image: 415 UNSUPPORTED_MEDIA_TYPE", async () => {
    const res = await fetch(`${s.base}/img/${text}/100w`);
    expect(res.status).toBe(415);
    expect(((await res.json()) as Envelope).message).toBe("UNSUPPORTED_MEDIA_TYPE");
  });

  test("a decompression bomb is refused with 415 and the server stays up", async () => {
    const bomb = await upload(s, await bombPng(), "bomb.png", "image/png");
    const meta = await s.apiJson("GET", `/api/v1/.files/${bomb}`);
    expect(meta.body!.files[bomb]).toMatchObject({ type: "image/png", width: 30000, height: 30000 });
    const res = await fetch(`${s.base}/img/${bomb}/100w`);
    expect(res.status).toBe(415);
    expect(((await res.json()) as Envelope).details).toContain("pixels");
    expect((await fetch(`${s.base}/img/${photo}/400w`)).status).toBe(200);
  });

  test("POST is 405", async () => {
    expect((await fetch(`${s.base}/img/${photo}/100w`, { method: "POST" })).status).toBe(405);
  });
});

describe("settings", () => {
  let priv: S;
  let uuid: string;
  beforeAll(async () => {
    priv = await adminSite({ env: { RESD_PUBLIC_MEDIA: "0", RESD_IMG_MAX_VARIANTS: "2", RESD_IMG_MAX_EDGE: "500", RESD_IMG_MAX_PIXELS: "500000" } });
    uuid = await upload(priv, await sharp({ create: { width: 600, height: 400, channels: 3, background: "gray" } }).jpeg().toBuffer(), "p.jpg", "image/jpeg");
  });
  afterAll(() => priv.cleanup());

  test("RESD_PUBLIC_MEDIA=0: /img and /download need view-.files", async () => {
    const anon = await fetch(`${priv.base}/img/${uuid}/100w`);
    expect(anon.status).toBe(403);
    expect(((await anon.json()) as Envelope).needs.split(",")).toContain("view-.files");
    expect((await fetch(`${priv.base}/download/${uuid}`)).status).toBe(403);
    const ok = await priv.api("GET", `/img/${uuid}/100w`);
    expect(ok.status).toBe(200);
    expect(ok.headers.get("cache-control")).toBe("private, max-age=31536000, immutable");
    expect((await priv.api("GET", `/download/${uuid}`)).status).toBe(200);
  });

  test("RESD_IMG_MAX_EDGE bounds the spec; RESD_IMG_MAX_VARIANTS bounds what is kept", async () => {
    expect((await priv.api("GET", `/img/${uuid}/501w`)).status).toBe(400);
    for (const spec of ["101w", "102w", "103w"]) expect((await priv.api("GET", `/img/${uuid}/${spec}`)).status).toBe(200);
    expect(readdirSync(join(priv.dir, "data/files/cache", uuid)).length).toBe(2);
  });

  test("RESD_IMG_MAX_PIXELS refuses larger sources", async () => {
    const big = await upload(priv, await sharp({ create: { width: 1000, height: 600, channels: 3, background: "gray" } }).jpeg().toBuffer(), "b.jpg", "image/jpeg");
    expect((await priv.api("GET", `/img/${big}/100w`)).status).toBe(415);
    expect(existsSync(join(priv.dir, "data/files/cache", big))).toBe(false);
  });
});

/** Unit tests of the pure media pieces: sniffing, names, multipart framing, specs, ranges, limiter. */
import { describe, expect, test } from "bun:test";
import { detectType } from "../src/core/files/sniff";
import { cleanFileName } from "../src/core/files/names";
import { multipartBoundary, readMultipart } from "../src/core/files/multipart";
import { parseSpec, resizeOptions } from "../src/core/files/images";
import { Limiter } from "../src/core/files/limiter";
import { contentDisposition, parseRange } from "../src/http/media";
import { AppError } from "../src/core/errors";

const b = (...xs: (number | string)[]) =>
  new Uint8Array(xs.flatMap((x) => (typeof x === "string" ? [...x].map((c) => c.charCodeAt(0)) : [x])));

describe("detectType", () => {
  const cases: [string, Uint8Array, string | null, string, string][] = [
    ["jpeg", b(0xff, 0xd8, 0xff, 0xe0), "application/octet-stream", "x", "image/jpeg"],
    ["png despite a gif claim", b(0x89, "PNG\r\n", 0x1a, "\n"), "image/gif", "a.gif", "image/png"],
    ["gif", b("GIF89a"), null, "a", "image/gif"],
    ["webp", b("RIFF", 0, 0, 0, 0, "WEBP"), null, "a", "image/webp"],
    ["avif", b(0, 0, 0, 0x1c, "ftypavif"), null, "a", "image/avif"],
    ["tiff", b("II*", 0), null, "a", "image/tiff"],
    ["pdf", b("%PDF-1.7"), "text/plain", "a.txt", "application/pdf"],
    ["svg", b('<?xml version="1.0"?>\n<!-- c --><svg xmlns="http://www.w3.org/2000/svg">'), "image/png", "a.png", "image/svg+xml"],
    ["html claimed as png", b("<!DOCTYPE html><html>"), "image/png", "a.png", "text/html"],
    ["text claimed as jpeg is not an image", b("hello world"), "image/jpeg", "a.jpg", "text/plain"],
    ["binary claimed as png is not an image", b(0, 1, 2, 3, 250), "image/png", "a.png", "application/octet-stream"],
    ["docx keeps its zip-family claim", b("PK", 3, 4), "application/vnd.openxmlformats-officedocument.wordprocessingml.document", "a.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"],
    ["docx by extension", b("PK", 3, 4), "application/octet-stream", "a.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"],
    ["plain zip", b("PK", 3, 4), "image/jpeg", "a.jpg", "application/zip"],
    ["csv by claim", b("a,b\n1,2\n"), "text/csv", "a.csv", "text/csv"],
    ["json by extension", b('{"a":1}'), null, "a.json", "application/json"],
    ["binary cannot claim text", b(0, 0, 0, 1), "text/csv", "a.csv", "application/octet-stream"],
    ["unknown binary keeps a harmless claim", b(0, 0, 0, 1), "application/x-custom", "a.bin", "application/x-custom"],
    ["empty", b(), null, "empty", "application/octet-stream"],
  ];
  for (const [label, head, claim, name, want] of cases) test(label, () => expect(detectType(head, claim, name)).toBe(want));
});

describe("cleanFileName", () => {
  test.each([
    ["../../etc/passwd", "passwd"],
    ["C:\\Users\\me\\photo.jpg", "photo.jpg"],
    ["a\u0000b\nc.txt", "abc.txt"],
    ['we<ir>d:"na|me?*.txt', "we_ir_d__na_me__.txt"],
    ["...hidden", "hidden"],
    ["", "file"],
    ["/", "file"],
    ["Fotó é.jpg", "Fotó é.jpg"],
  ])("%p -> %p", (raw, want) => expect(cleanFileName(raw)).toBe(want));
  test("long names are cut to 255 bytes keeping the extension", () => {
    const out = cleanFileName(`${"é".repeat(300)}.jpeg`);
    expect(new TextEncoder().encode(out).length).toBeLessThanOrEqual(255);
    expect(out.endsWith("é.jpeg")).toBe(true);
  });
});

async function* chunked(text: string | Uint8Array, size: number) {
  const all = typeof text === "string" ? new TextEncoder().encode(text) : text;
  for (let i = 0; i < all.length; i += size) yield all.subarray(i, i + size);
}

async function collect(body: AsyncIterable<Uint8Array>, boundary: string) {
  const out: { name: string; filename: string | null; type: string | null; text: string }[] = [];
  for await (const p of readMultipart(body, boundary)) {
    const parts: Uint8Array[] = [];
    for await (const c of p.body) parts.push(c);
    out.push({ name: p.name, filename: p.filename, type: p.contentType, text: Buffer.concat(parts).toString("latin1") });
  }
  return out;
}

describe("readMultipart", () => {
  const boundary = "----x7MA4YWxkTrZu0gW";
  const payload = "line1\r\n--not-the-boundary\r\n------x7MA4YWxkTrZu0g partial\r\n\r\nend";
  const body =
    `preamble\r\n--${boundary}\r\nContent-Disposition: form-data; name="title"\r\n\r\nMy title\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a \\"q\\".txt"; filename*=UTF-8''%C3%A9t%C3%A9.txt\r\nContent-Type: text/plain\r\n\r\n${payload}\r\n` +
    `--${boundary}--\r\nepilogue`;
  for (const size of [1, 2, 7, 64, 100000]) {
    test(`parts survive ${size}-byte chunks`, async () => {
      const parts = await collect(chunked(body, size), boundary);
      expect(parts).toEqual([
        { name: "title", filename: null, type: null, text: "My title" },
        { name: "file", filename: "été.txt", type: "text/plain", text: payload },
      ]);
    });
  }
  test("unread parts are skipped", async () => {
    const names: string[] = [];
    for await (const p of readMultipart(chunked(body, 5), boundary)) names.push(p.name);
    expect(names).toEqual(["title", "file"]);
  });
  test("a body cut inside a part is 400", async () => {
    const cut = body.slice(0, body.indexOf("end"));
    await expect(collect(chunked(cut, 16), boundary)).rejects.toMatchObject({ status: 400 });
  });
  test("boundary from Content-Type", () => {
    expect(multipartBoundary(`multipart/form-data; boundary="${boundary}"`)).toBe(boundary);
    expect(multipartBoundary("multipart/form-data; boundary=abc; charset=x")).toBe("abc");
    expect(multipartBoundary("application/json")).toBeNull();
    expect(multipartBoundary("multipart/form-data")).toBeNull();
  });
});

describe("parseSpec", () => {
  test.each([
    ["800w", { kind: "w", width: 800 }],
    ["600h", { kind: "h", height: 600 }],
    ["300x200f", { kind: "f", width: 300, height: 200 }],
    ["300x200c", { kind: "c", width: 300, height: 200 }],
    ["4096w", { kind: "w", width: 4096 }],
  ])("%p", (raw, want) => expect(parseSpec(raw, 4096)).toMatchObject(want));
  test.each(["0w", "0800w", "4097w", "99999h", "300x0c", "300x200", "300x200x", "w", "800", "800W", "-1w", "800w.webp", "1e3w", ""])(
    "%p is 400",
    (raw) => {
      let err: unknown;
      try { parseSpec(raw, 4096); } catch (e) { err = e; }
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).status).toBe(400);
    },
  );
});

describe("resizeOptions never enlarges", () => {
  test("cover larger than the source shrinks the box keeping its ratio", () => {
    expect(resizeOptions({ kind: "c", width: 800, height: 800, text: "" }, { width: 1000, height: 500 })).toMatchObject({ width: 500, height: 500, fit: "cover" });
    expect(resizeOptions({ kind: "c", width: 400, height: 200, text: "" }, { width: 1000, height: 500 })).toMatchObject({ width: 400, height: 200 });
  });
  test("width, height and fit pass withoutEnlargement", () => {
    expect(resizeOptions({ kind: "w", width: 10, text: "" }, { width: 5, height: 5 })).toMatchObject({ withoutEnlargement: true });
    expect(resizeOptions({ kind: "f", width: 10, height: 10, text: "" }, { width: 5, height: 5 })).toMatchObject({ fit: "inside", withoutEnlargement: true });
  });
});

describe("parseRange", () => {
  test.each([
    ["bytes=0-9", 100, { start: 0, end: 9 }],
    ["bytes=90-", 100, { start: 90, end: 99 }],
    ["bytes=-10", 100, { start: 90, end: 99 }],
    ["bytes=-1000", 100, { start: 0, end: 99 }],
    ["bytes=50-1000", 100, { start: 50, end: 99 }],
    ["bytes=100-", 100, "unsatisfiable"],
    ["bytes=-0", 100, "unsatisfiable"],
    ["bytes=0-1,5-6", 100, null],
    ["bytes=9-1", 100, null],
    ["items=0-1", 100, null],
  ] as const)("%p of %p", (h, size, want) => expect(parseRange(h, size)).toEqual(want as never));
});

test("contentDisposition encodes per RFC 6266 / 8187", () => {
  expect(contentDisposition("attachment", "Grüße (1)'s.pdf")).toBe(
    `attachment; filename="Gr__e (1)'s.pdf"; filename*=UTF-8''Gr%C3%BC%C3%9Fe%20%281%29%27s.pdf`,
  );
  expect(contentDisposition("inline", 'a"b\\c.txt')).toBe(`inline; filename="a_b_c.txt"; filename*=UTF-8''a%22b%5Cc.txt`);
});

test("Limiter runs at most max at once and refuses past its queue", async () => {
  const lim = new Limiter(2, 1);
  let running = 0;
  let peak = 0;
  const release: (() => void)[] = [];
  const job = () => lim.run(async () => {
    running++;
    peak = Math.max(peak, running);
    await new Promise<void>((r) => release.push(r));
    running--;
  });
  const a = job(), b2 = job(), c = job();
  await expect(job()).rejects.toMatchObject({ status: 503 });
  await Bun.sleep(5);
  expect(peak).toBe(2);
  while (release.length || lim.active) { release.shift()?.(); await Bun.sleep(1); }
  await Promise.all([a, b2, c]);
  expect(peak).toBe(2);
  expect(lim.active).toBe(0);
});

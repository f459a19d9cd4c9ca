/** Black-box: /api/v1/.files through the real server — upload, dedupe, metadata, limits, list/get/put/delete. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { adminSite } from "./helpers/site";

type S = Awaited<ReturnType<typeof adminSite>>;
/** JSON answers, checked field by field. */
type Envelope = Record<string, any>;
const md5 = (b: Uint8Array) => new Bun.CryptoHasher("md5").update(b).digest("hex");
const tmpFiles = (dir: string) => (existsSync(join(dir, "data/files/.tmp")) ? readdirSync(join(dir, "data/files/.tmp")) : []);

async function upload(s: S, bytes: Uint8Array, name: string, type: string, more: Record<string, string> = {}) {
  const fd = new FormData();
  for (const [k, v] of Object.entries(more)) fd.append(k, v);
  fd.append("file", new Blob([bytes], { type }), name);
  const res = await fetch(`${s.base}/api/v1/.files`, { method: "POST", body: fd, headers: { authorization: `Bearer ${s.token}` } });
  const body = (await res.json()) as Record<string, any>;
  return { status: res.status, body, meta: body.files ? (Object.values(body.files)[0] as Record<string, any>) : null };
}

let s: S;
let jpeg: Uint8Array<ArrayBuffer>;
beforeAll(async () => {
  s = await adminSite();
  // 1200x800 pixels stored, EXIF orientation 6: displayed as 800x1200.
  jpeg = await sharp({ create: { width: 1200, height: 800, channels: 3, background: { r: 10, g: 120, b: 200 } } })
    .jpeg().withMetadata({ orientation: 6 }).toBuffer();
});
afterAll(() => s.cleanup());

describe("upload", () => {
  test("an image: MD5 uuid, sniffed type, cleaned name, displayed size, content on disk", async () => {
    const r = await upload(s, jpeg, "../../secret/Fotó 1.jpg", "application/octet-stream", { title: "Holiday" });
    expect(r.status).toBe(201);
    expect(r.body.message).toBe("RESOURCE_CREATED");
    const uuid = md5(jpeg);
    expect(Object.keys(r.body.files)).toEqual([uuid]);
    expect(r.meta).toMatchObject({ uuid, name: "Fotó 1.jpg", title: "Holiday", type: "image/jpeg", size: jpeg.length, width: 800, height: 1200, orientation: "portrait" });
    expect(new Uint8Array(readFileSync(join(s.dir, "data/files", uuid.slice(0, 2), uuid)))).toEqual(jpeg);
    expect(tmpFiles(s.dir)).toEqual([]);
  });

  test("the same content again: 201, same uuid, nothing new stored", async () => {
    const r = await upload(s, jpeg, "other-name.jpg", "image/jpeg");
    expect(r.status).toBe(201);
    expect(r.body.message).toBe("RESOURCE_CREATED");
    expect(r.meta).toMatchObject({ uuid: md5(jpeg), name: "Fotó 1.jpg", title: "Holiday" });
    expect(r.body.duplicate).toBe(true);
    const list = await s.apiJson("GET", "/api/v1/.files");
    expect(Object.keys(list.body!.files)).toEqual([md5(jpeg)]);
    expect(readdirSync(join(s.dir, "data/files", md5(jpeg).slice(0, 2)))).toEqual([md5(jpeg)]);
  });

  test("a non-image claimed as an image is stored by its bytes, without dimensions", async () => {
    const text = new TextEncoder().encode("just some text, not a picture\n");
    const r = await upload(s, text, "fake.png", "image/png");
    expect(r.status).toBe(201);
    expect(r.meta).toMatchObject({ type: "text/plain", size: text.length, name: "fake.png", title: "" });
    expect(r.meta!.width).toBeUndefined();
  });

  test("a PNG is recognised whatever the claim", async () => {
    const png = await sharp({ create: { width: 30, height: 20, channels: 4, background: "#ff000080" } }).png().toBuffer();
    const r = await upload(s, png, "p.bin", "text/plain");
    expect(r.meta).toMatchObject({ type: "image/png", width: 30, height: 20, orientation: "landscape" });
  });

  test("no `file` part: 400 INVALID_DATA; not multipart: 400", async () => {
    const fd = new FormData();
    fd.append("title", "no file");
    let res = await fetch(`${s.base}/api/v1/.files`, { method: "POST", body: fd, headers: { authorization: `Bearer ${s.token}` } });
    expect(res.status).toBe(400);
    expect((await res.json()) as Envelope).toMatchObject({ message: "INVALID_DATA", details: "the multipart part `file` is missing" });
    res = await s.api("POST", "/api/v1/.files", { title: "json" });
    expect(res.status).toBe(400);
    expect(((await res.json()) as Envelope).message).toBe("INVALID_DATA");
  });

  test("a caller without permission is refused before the body is read", async () => {
    const fd = new FormData();
    fd.append("file", new Blob(["x"]), "x.txt");
    const res = await fetch(`${s.base}/api/v1/.files`, { method: "POST", body: fd });
    expect(res.status).toBe(403);
    const body = (await res.json()) as Envelope;
    expect(body.needs.split(",")).toContain("create-.files");
    const list = await fetch(`${s.base}/api/v1/.files`);
    expect(list.status).toBe(403);
    expect(((await list.json()) as Envelope).needs.split(",")).toContain("view-.files");
  });

  test("the generic record routes do not serve .files_meta", async () => {
    expect((await s.apiJson("GET", "/api/v1/.files_meta")).status).toBe(404);
  });
});

describe("metadata", () => {
  const docs: string[] = [];
  beforeAll(async () => {
    for (const [i, t] of ["alpha report", "beta notes", "gamma data"].entries()) {
      const r = await upload(s, new TextEncoder().encode(`${t}\n`.repeat(i + 1)), `${t}.txt`, "text/plain", { title: t });
      docs.push(r.meta!.uuid);
    }
  });

  test("list: keyed by uuid under `files`, with limit, sort, filter and search", async () => {
    const all = await s.apiJson("GET", "/api/v1/.files");
    expect(all.status).toBe(200);
    expect(Object.keys(all.body!.files).length).toBe(6);
    expect(all.headers.get("last-modified")).toBeTruthy();
    const page = await s.apiJson("GET", "/api/v1/.files?filter=type:text/plain&sort=size|numeric|desc&limit=2");
    expect(page.body!.total).toBe(4);
    expect(page.body!.count).toBe(2);
    const sizes = Object.values(page.body!.files).map((f: any) => f.size);
    expect(sizes).toEqual([...sizes].sort((a, b) => b - a));
    expect(Object.keys(page.body!.files)).toContain(docs[2]);
    const found = await s.apiJson("GET", "/api/v1/.files?search=beta");
    expect(Object.keys(found.body!.files)).toEqual([docs[1]]);
    expect((await s.apiJson("GET", "/api/v1/.files?sort=nope|asc")).status).toBe(400);
  });

  test("get one; unknown 404", async () => {
    const one = await s.apiJson("GET", `/api/v1/.files/${docs[0]}`);
    expect(one.status).toBe(200);
    expect(one.body!.files[docs[0]]).toMatchObject({ title: "alpha report", name: "alpha report.txt" });
    expect((await s.apiJson("GET", `/api/v1/.files/${"0".repeat(32)}`)).status).toBe(404);
    expect((await s.apiJson("GET", "/api/v1/.files/not-a-uuid")).status).toBe(404);
  });

  test("put changes title and name only", async () => {
    const ok = await s.apiJson("PUT", `/api/v1/.files/${docs[0]}`, { title: "Alpha (final)", name: "dir/alpha-final.txt" });
    expect(ok.status).toBe(200);
    expect(ok.body!.message).toBe("RESOURCE_UPDATED");
    expect(ok.body!.files[docs[0]]).toMatchObject({ title: "Alpha (final)", name: "alpha-final.txt", type: "text/plain" });
    const bad = await s.apiJson("PUT", `/api/v1/.files/${docs[0]}`, { size: 1, type: "image/png" });
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.body!.errors).sort()).toEqual(["size", "type"]);
    expect((await s.apiJson("PUT", `/api/v1/.files/${"0".repeat(32)}`, { title: "x" })).status).toBe(404);
  });

  test("delete removes metadata, content and resized copies", async () => {
    const uuid = md5(jpeg);
    expect((await fetch(`${s.base}/img/${uuid}/100w`)).status).toBe(200);
    expect(existsSync(join(s.dir, "data/files/cache", uuid, "100w.webp"))).toBe(true);
    const del = await s.apiJson("DELETE", `/api/v1/.files/${uuid}`);
    expect(del.status).toBe(200);
    expect(del.body!.message).toBe("RESOURCE_DELETED");
    expect((await s.apiJson("GET", `/api/v1/.files/${uuid}`)).status).toBe(404);
    expect(existsSync(join(s.dir, "data/files", uuid.slice(0, 2), uuid))).toBe(false);
    expect(existsSync(join(s.dir, "data/files/cache", uuid))).toBe(false);
    expect((await fetch(`${s.base}/img/${uuid}/100w`)).status).toBe(404);
    expect((await fetch(`${s.base}/download/${uuid}`)).status).toBe(404);
    expect((await s.apiJson("DELETE", `/api/v1/.files/${uuid}`)).status).toBe(404);
    // and it can be uploaded again
    expect((await upload(s, jpeg, "again.jpg", "image/jpeg")).meta).toMatchObject({ uuid, name: "again.jpg" });
  });
});

describe("limits and failures", () => {
  let small: S;
  const MAX = 100_000;
  beforeAll(async () => {
    small = await adminSite({ env: { RESD_MAX_UPLOAD: String(MAX) } });
  });
  afterAll(() => small.cleanup());

  test("a file of exactly the maximum is accepted", async () => {
    const r = await upload(small, new Uint8Array(MAX).fill(7), "max.bin", "application/octet-stream");
    expect(r.status).toBe(201);
    expect(r.meta!.size).toBe(MAX);
  });

  test("over the maximum with Content-Length: 413 UPLOAD_TOO_LARGE, nothing kept", async () => {
    const r = await upload(small, new Uint8Array(MAX + 1).fill(8), "big.bin", "application/octet-stream");
    expect(r.status).toBe(413);
    expect(r.body.message).toBe("UPLOAD_TOO_LARGE");
    expect(tmpFiles(small.dir)).toEqual([]);
  });

  test("over the maximum streamed without Content-Length: 413 while streaming, no partial file", async () => {
    const boundary = "b0undary";
    const enc = new TextEncoder();
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(enc.encode(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="s.bin"\r\n\r\n`));
      },
      pull(c) {
        // 1 MiB in 16 KiB chunks: far past the limit, so the server must stop early.
        if (sent >= 1 << 20) {
          c.enqueue(enc.encode(`\r\n--${boundary}--\r\n`));
          c.close();
          return;
        }
        sent += 16384;
        c.enqueue(new Uint8Array(16384).fill(9));
      },
    });
    const res = await fetch(`${small.base}/api/v1/.files`, {
      method: "POST",
      body: stream,
      headers: { authorization: `Bearer ${small.token}`, "content-type": `multipart/form-data; boundary=${boundary}` },
      duplex: "half",
    } as RequestInit);
    expect(res.status).toBe(413);
    expect(((await res.json()) as Envelope).message).toBe("UPLOAD_TOO_LARGE");
    await Bun.sleep(50);
    expect(tmpFiles(small.dir)).toEqual([]);
    const list = await small.apiJson("GET", "/api/v1/.files");
    expect(Object.keys(list.body!.files).length).toBe(1);
  });

  test("a storage failure is 500 with nothing half-written", async () => {
    const bytes = new TextEncoder().encode("content whose shard folder cannot be created\n");
    const uuid = md5(bytes);
    const shard = join(small.dir, "data/files", uuid.slice(0, 2));
    rmSync(shard, { recursive: true, force: true });
    mkdirSync(join(small.dir, "data/files"), { recursive: true });
    writeFileSync(shard, "a file where the folder should be");
    const r = await upload(small, bytes, "x.txt", "text/plain");
    expect(r.status).toBe(500);
    expect(r.body.message).toBe("RESOURCE_CREATE_FAILED");
    expect(tmpFiles(small.dir)).toEqual([]);
    expect((await small.apiJson("GET", `/api/v1/.files/${uuid}`)).status).toBe(404);
    rmSync(shard);
    expect((await upload(small, bytes, "x.txt", "text/plain")).status).toBe(201);
  });
});

/**
 * Files in an S3-compatible bucket (RESD_FILES_URL=s3://bucket/prefix) through the real server, against
 * an S3-protocol server started here (s3rver): upload (multipart for a large file), MD5 identity and
 * dedupe, download with ranges and ETags streamed through resd (never a redirect to the bucket),
 * /img variants kept in the bucket, delete removing every object; nothing of it on local disk.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { S3Client } from "bun";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { startS3, type S3Server } from "./helpers/s3";
import { adminSite, cli, MAIN, onPostgres, serve } from "./helpers/site";

const md5 = (b: Uint8Array) => new Bun.CryptoHasher("md5").update(b).digest("hex");

let s3: S3Server;
let env: Record<string, string>;
let bucket: S3Client;
let s: Awaited<ReturnType<typeof adminSite>>;

beforeAll(async () => {
  s3 = await startS3(["media"]);
  env = {
    RESD_FILES_URL: "s3://media/site-a",
    S3_ENDPOINT: s3.endpoint,
    S3_ACCESS_KEY_ID: "S3RVER",
    S3_SECRET_ACCESS_KEY: "S3RVER",
    S3_REGION: "us-east-1",
  };
  bucket = new S3Client({ endpoint: env.S3_ENDPOINT, bucket: "media", accessKeyId: "S3RVER", secretAccessKey: "S3RVER", region: "us-east-1" });
  // The bucket is named on the command line here (--files-url), in the environment elsewhere.
  const { RESD_FILES_URL: _, ...credentials } = env;
  s = await adminSite({ env: credentials, serveArgs: ["--files-url", "s3://media/site-a"] });
}, 60_000);

afterAll(async () => {
  await s?.cleanup();
  await s3?.stop();
});

const keys = async (prefix = "site-a/") => ((await bucket.list({ prefix })).contents ?? []).map((o) => o.key).sort();

async function upload(bytes: Uint8Array, name: string, type: string) {
  const fd = new FormData();
  fd.append("file", new Blob([bytes as Uint8Array<ArrayBuffer>], { type }), name);
  const res = await fetch(`${s.base}/api/v1/.files`, { method: "POST", body: fd, headers: { authorization: `Bearer ${s.token}` } });
  const body = (await res.json()) as Record<string, any>;
  return { status: res.status, uuid: body.files ? Object.keys(body.files)[0]! : null, body };
}

describe("files in an S3-compatible bucket", () => {
  test("upload: stored under the prefix by MD5, once however often it is sent; nothing on local disk", async () => {
    const bytes = new TextEncoder().encode("hello from the bucket\n".repeat(100));
    const a = await upload(bytes, "a.txt", "text/plain");
    expect(a.status).toBe(201);
    expect(a.uuid).toBe(md5(bytes));
    const again = await upload(bytes, "b.txt", "text/plain");
    expect([200, 201]).toContain(again.status);
    expect(again.uuid).toBe(a.uuid);
    expect(await keys()).toEqual([`site-a/${a.uuid!.slice(0, 2)}/${a.uuid}`]);
    const local = join(s.dir, "data", "files");
    const onDisk = existsSync(local) ? readdirSync(local, { recursive: true }).filter((f) => !String(f).startsWith(".tmp")) : [];
    expect(onDisk).toEqual([]);
  });

  test("download streams through resd: whole, ranges, ETag and 304; never a redirect", async () => {
    const bytes = new Uint8Array(300_000).map((_, i) => i % 251);
    const { uuid } = await upload(bytes, "data.bin", "application/octet-stream");
    const auth = { authorization: `Bearer ${s.token}` };
    const whole = await fetch(`${s.base}/download/${uuid}`, { headers: auth, redirect: "manual" });
    expect(whole.status).toBe(200);
    expect(whole.headers.get("etag")).toBe(`"${uuid}"`);
    expect(md5(new Uint8Array(await whole.arrayBuffer()))).toBe(uuid!);
    const part = await fetch(`${s.base}/download/${uuid}`, { headers: { ...auth, range: "bytes=1000-1999" }, redirect: "manual" });
    expect(part.status).toBe(206);
    expect(part.headers.get("content-range")).toBe("bytes 1000-1999/300000");
    expect(new Uint8Array(await part.arrayBuffer())).toEqual(bytes.slice(1000, 2000));
    const tail = await fetch(`${s.base}/download/${uuid}`, { headers: { ...auth, range: "bytes=-10" } });
    expect(new Uint8Array(await tail.arrayBuffer())).toEqual(bytes.slice(-10));
    expect((await fetch(`${s.base}/download/${uuid}`, { headers: { ...auth, range: "bytes=400000-" } })).status).toBe(416);
    expect((await fetch(`${s.base}/download/${uuid}`, { headers: { ...auth, "if-none-match": `"${uuid}"` } })).status).toBe(304);
  });

  test("a large upload (12 MiB) reaches the bucket whole (multipart)", async () => {
    const bytes = new Uint8Array(12 * 1024 * 1024).map((_, i) => (i * 7) % 256);
    const { status, uuid } = await upload(bytes, "big.bin", "application/octet-stream");
    expect(status).toBe(201);
    expect((await bucket.file(`site-a/${uuid!.slice(0, 2)}/${uuid}`).stat()).size).toBe(bytes.length);
    const back = await fetch(`${s.base}/download/${uuid}`, { headers: { authorization: `Bearer ${s.token}` } });
    expect(md5(new Uint8Array(await back.arrayBuffer()))).toBe(uuid!);
  }, 60_000);

  test("/img variants are made from the bucket and kept there; delete removes the file and every variant", async () => {
    const jpeg = new Uint8Array(await sharp({ create: { width: 640, height: 480, channels: 3, background: { r: 200, g: 30, b: 60 } } }).jpeg().toBuffer());
    const { uuid } = await upload(jpeg, "photo.jpg", "image/jpeg");
    const auth = { authorization: `Bearer ${s.token}` };
    for (const spec of ["100w", "50w"]) {
      const img = await fetch(`${s.base}/img/${uuid}/${spec}`, { headers: auth });
      expect(img.status).toBe(200);
      expect(img.headers.get("content-type")).toBe("image/webp");
      expect((await sharp(new Uint8Array(await img.arrayBuffer())).metadata()).width).toBe(Number.parseInt(spec));
    }
    expect(await keys(`site-a/cache/${uuid}/`)).toEqual([`site-a/cache/${uuid}/100w.webp`, `site-a/cache/${uuid}/50w.webp`]);
    // A second request is answered from the bucket's copy.
    const cached = await fetch(`${s.base}/img/${uuid}/100w`, { headers: auth, redirect: "manual" });
    expect(cached.status).toBe(200);
    expect((await sharp(new Uint8Array(await cached.arrayBuffer())).metadata()).format).toBe("webp");

    const del = await fetch(`${s.base}/api/v1/.files/${uuid}`, { method: "DELETE", headers: auth });
    expect(del.status).toBe(200);
    expect(await keys(`site-a/cache/${uuid}/`)).toEqual([]);
    expect(await bucket.exists(`site-a/${uuid!.slice(0, 2)}/${uuid}`)).toBe(false);
    expect((await fetch(`${s.base}/download/${uuid}`, { headers: auth })).status).toBe(404);
  });

  test("an invalid RESD_FILES_URL stops start-up with the setting named; backup says where the files are", async () => {
    const bad = await cli(s.dir, ["config"], { env: { ...env, RESD_FILES_URL: "s3:/media" } });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("RESD_FILES_URL");
    const shown = await cli(s.dir, ["config"], { env });
    expect(shown.stdout).toContain("s3://media/site-a");
    const out = join(s.dir, "backup.tar.gz");
    const backup = await cli(s.dir, ["backup", "--out", out], { env });
    expect(backup.stderr).toContain("uploaded files are kept in s3://media/site-a and are not in this archive");
    // A PostgreSQL site has nothing for resd backup to copy: it says what to use instead.
    expect(backup.code).toBe(onPostgres ? 2 : 0);
  });
});

test("a bucket that cannot be reached: serve refuses to start, naming it; one lost later fails uploads cleanly", async () => {
  const dir = mkdtempSync(join(tmpdir(), "resd-s3-down-"));
  try {
    const p = Bun.spawn([process.execPath, MAIN, "serve", "--dir", dir, "--port", "0", "--host", "127.0.0.1"], { env: { ...process.env, ...env, S3_ENDPOINT: "http://127.0.0.1:1" }, stdout: "pipe", stderr: "pipe" });
    const [stderr, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
    expect(code).toBe(1);
    expect(stderr).toContain("the bucket of s3://media/site-a cannot be used (ConnectionRefused");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  const other = await startS3(["media"]);
  const lost = await adminSite({ env: { ...env, S3_ENDPOINT: other.endpoint } });
  try {
    await other.stop();
    const fd = new FormData();
    fd.append("file", new Blob(["some content"], { type: "text/plain" }), "x.txt");
    const res = await fetch(`${lost.base}/api/v1/.files`, { method: "POST", body: fd, headers: { authorization: `Bearer ${lost.token}` } });
    expect(res.status).toBe(500);
    expect(await res.json()).toMatchObject({ success: false, message: "RESOURCE_CREATE_FAILED" });
    const list = await fetch(`${lost.base}/api/v1/.files`, { headers: { authorization: `Bearer ${lost.token}` } });
    expect(((await list.json()) as { count: number }).count).toBe(0);
    const staging = join(lost.dir, "data", "files", ".tmp");
    expect(existsSync(staging) ? readdirSync(staging) : []).toEqual([]);
  } finally {
    await lost.cleanup();
  }
}, 60_000);

describe("resd migrate --files-to: moving a site's files to a bucket and back", () => {
  test("local → bucket → local, each file checked; a second run finds them there; a corrupt file moves nothing", async () => {
    const local = await adminSite();
    const auth = { authorization: `Bearer ${local.token}` };
    const jpeg = new Uint8Array(await sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 1, g: 2, b: 3 } } }).jpeg().toBuffer());
    const text = new TextEncoder().encode("a text file to move\n".repeat(50));
    const uuids: string[] = [];
    for (const [bytes, name, type] of [[jpeg, "p.jpg", "image/jpeg"], [text, "t.txt", "text/plain"]] as const) {
      const fd = new FormData();
      fd.append("file", new Blob([bytes as Uint8Array<ArrayBuffer>], { type }), name);
      const res = await fetch(`${local.base}/api/v1/.files`, { method: "POST", body: fd, headers: auth });
      expect(res.status).toBe(201);
      uuids.push(Object.keys(((await res.json()) as { files: Record<string, unknown> }).files)[0]!);
    }
    expect((await fetch(`${local.base}/img/${uuids[0]}/20w`, { headers: auth })).status).toBe(200);

    // A running server would miss uploads made during the copy.
    const busy = await cli(local.dir, ["migrate", "--files-to", "s3://media/moved"], { env });
    expect(busy.code).toBe(2);
    expect(busy.stderr).toContain("stop it first");
    await local.stop();

    const { RESD_FILES_URL: _, ...credentials } = env;
    const first = await cli(local.dir, ["migrate", "--files-to", "s3://media/moved", "--json"], { env: credentials });
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ ok: true, from: "local", to: "s3://media/moved", files: 2, copied: 2, present: 0, bytes: jpeg.length + text.length });
    expect(await keys("moved/")).toEqual(uuids.map((u) => `moved/${u.slice(0, 2)}/${u}`).sort());
    const again = await cli(local.dir, ["migrate", "--files-to", "s3://media/moved", "--json"], { env: credentials });
    expect(again.stderr).toBe("");
    expect(JSON.parse(again.stdout)).toMatchObject({ files: 2, copied: 0, present: 2 });

    // The site served from the bucket.
    const onS3 = await serve(local.dir, { env: credentials, args: ["--files-url", "s3://media/moved"] });
    try {
      const got = await fetch(`${onS3.base}/download/${uuids[1]}`, { headers: auth });
      expect(new Uint8Array(await got.arrayBuffer())).toEqual(text);
    } finally {
      await onS3.stop();
    }

    // And back: the local copies gone, brought back from the bucket.
    rmSync(join(local.dir, "data", "files"), { recursive: true, force: true });
    const back = await cli(local.dir, ["migrate", "--files-to", "local", "--json"], { env: { ...credentials, RESD_FILES_URL: "s3://media/moved" } });
    expect(back.code).toBe(0);
    expect(JSON.parse(back.stdout)).toMatchObject({ from: "s3://media/moved", to: "local", files: 2, copied: 2 });
    const onDisk = await serve(local.dir);
    try {
      const got = await fetch(`${onDisk.base}/download/${uuids[0]}`, { headers: auth });
      expect(md5(new Uint8Array(await got.arrayBuffer()))).toBe(uuids[0]!);
    } finally {
      await onDisk.stop();
    }

    // A file whose content no longer matches its MD5: the run fails and leaves the target as it was.
    const sorted = [...uuids].sort();
    writeFileSync(join(local.dir, "data", "files", sorted[1]!.slice(0, 2), sorted[1]!), "tampered");
    const bad = await cli(local.dir, ["migrate", "--files-to", "s3://media/other"], { env: credentials });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(`does not match its checksum`);
    expect(await keys("other/")).toEqual([]);
    rmSync(local.dir, { recursive: true, force: true });
  }, 120_000);
});

test("listings longer than one page (1,000 keys): count, delete by prefix and content keys see every key", async () => {
  const { S3BlobStore } = await import("../src/core/files/s3-blob-store");
  const staging = mkdtempSync(join(tmpdir(), "resd-s3-staging-"));
  const store = new S3BlobStore("s3://media/paging", staging, bucket);
  try {
    const many = Array.from({ length: 1005 }, (_, i) => `cache/${"a".repeat(32)}/${i}w.webp`);
    for (let i = 0; i < many.length; i += 50) await Promise.all(many.slice(i, i + 50).map((k) => bucket.write(`paging/${k}`, "v")));
    const content = Array.from({ length: 3 }, (_, i) => new TextEncoder().encode(`content ${i}`));
    for (const c of content) await store.put(`${md5(c).slice(0, 2)}/${md5(c)}`, c);
    expect(await store.countPrefix(`cache/${"a".repeat(32)}/`)).toBe(1005);
    const found: string[] = [];
    for await (const k of store.contentKeys()) found.push(k);
    expect(found.sort()).toEqual(content.map((c) => `${md5(c).slice(0, 2)}/${md5(c)}`).sort());
    await store.deletePrefix(`cache/${"a".repeat(32)}/`);
    expect(await store.countPrefix(`cache/${"a".repeat(32)}/`)).toBe(0);
    expect(await keys("paging/")).toHaveLength(3);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}, 120_000);

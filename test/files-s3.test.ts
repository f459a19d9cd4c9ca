/**
 * Files in an S3-compatible bucket (RESD_FILES_URL=s3://bucket/prefix) through the real server, against
 * an S3-protocol server started here (s3rver): upload (multipart for a large file), MD5 identity and
 * dedupe, download with ranges and ETags streamed through resd (never a redirect to the bucket),
 * /img variants kept in the bucket, delete removing every object; nothing of it on local disk.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { S3Client } from "bun";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import S3rver from "s3rver";
import sharp from "sharp";
import { adminSite, cli, MAIN } from "./helpers/site";

const md5 = (b: Uint8Array) => new Bun.CryptoHasher("md5").update(b).digest("hex");

let bucketDir: string;
let s3rver: S3rver;
let env: Record<string, string>;
let bucket: S3Client;
let s: Awaited<ReturnType<typeof adminSite>>;

beforeAll(async () => {
  bucketDir = mkdtempSync(join(tmpdir(), "resd-s3rver-"));
  s3rver = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory: bucketDir, configureBuckets: [{ name: "media" }] });
  const { port } = await s3rver.run();
  env = {
    RESD_FILES_URL: "s3://media/site-a",
    S3_ENDPOINT: `http://127.0.0.1:${port}`,
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
  await s3rver?.close();
  rmSync(bucketDir, { recursive: true, force: true });
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
    expect(backup.code).toBe(0);
    expect(backup.stderr).toContain("uploaded files are kept in s3://media/site-a and are not in this archive");
  });
});

test("a bucket that cannot be reached: serve refuses to start, naming it; one lost later fails uploads cleanly", async () => {
  const dir = mkdtempSync(join(tmpdir(), "resd-s3-down-"));
  try {
    const p = Bun.spawn(["bun", MAIN, "serve", "--dir", dir, "--port", "0", "--host", "127.0.0.1"], { env: { ...process.env, ...env, S3_ENDPOINT: "http://127.0.0.1:1" }, stdout: "pipe", stderr: "pipe" });
    const [stderr, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
    expect(code).toBe(1);
    expect(stderr).toContain("the bucket of s3://media/site-a cannot be used (ConnectionRefused");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  const otherDir = mkdtempSync(join(tmpdir(), "resd-s3rver-"));
  const other = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory: otherDir, configureBuckets: [{ name: "media" }] });
  const { port } = await other.run();
  const lost = await adminSite({ env: { ...env, S3_ENDPOINT: `http://127.0.0.1:${port}` } });
  try {
    await other.close();
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
    rmSync(otherDir, { recursive: true, force: true });
  }
}, 60_000);

/**
 * The release check: `bun run build` output, copied alone into an empty folder outside the checkout
 * (no node_modules, no Bun on PATH), does what a self-hoster does on day one.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { rmSync, readdirSync, existsSync, statSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { WORKER_FROM_BYTES } from "../src/core/transfer/import";
import { bareEnv, loneBinary } from "./helpers/binary";

let work: string;
let binary: string;
let site: string;
let server: ReturnType<typeof Bun.spawn> | null = null;

const run = async (args: string[], cwd = site) => {
  const p = Bun.spawn([binary, ...args], { cwd, env: bareEnv(work), stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, stdout: stdout.trim(), stderr };
};

beforeAll(async () => {
  ({ work, binary } = await loneBinary("resd-release-"));
  site = join(work, "run"); // the folder holding the binary is the site, as after a download
  await Bun.write(join(site, "resources/notes.json"), JSON.stringify({ fields: { title: { type: "text", required: true }, year: { type: "number" }, tags: { type: "select", multi: true, options: { a: "A", b: "B" } } } }));
}, 180_000);

afterAll(async () => {
  if (server) { server.kill("SIGTERM"); await server.exited; }
  rmSync(work, { recursive: true, force: true });
});

test("the folder holds nothing but the binary and the site files; no node_modules anywhere above it", () => {
  expect(readdirSync(site).sort()).toEqual(["resd", "resources"]);
  for (let d = site; d !== "/"; d = join(d, "..")) expect(existsSync(join(d, "node_modules"))).toBe(false);
});

test("resd --version prints the version and the commit", async () => {
  const r = await run(["--version"]);
  expect(r.code).toBe(0);
  expect(r.stdout).toMatch(/^resd \d+\.\d+\.\d+ \(([0-9a-f]{7,}|unknown)\)$/);
});

test("user add, token, serve, upload a JPEG, /img as WebP, export and import round trip", async () => {
  expect((await run(["user", "add", "admin@example.com", "--password", "a-password", "--role", "admin", "--api"])).code).toBe(0);
  const tok = await run(["token", "admin@example.com"]);
  expect(tok.code).toBe(0);
  const auth = { authorization: `Bearer ${tok.stdout}` };

  server = Bun.spawn([binary, "serve", "--port", "0", "--host", "127.0.0.1", "--log-format", "text"], { cwd: site, env: bareEnv(work), stdout: "pipe", stderr: "pipe" });
  let out = "";
  void (async () => { for await (const c of server!.stdout as ReadableStream<Uint8Array>) out += new TextDecoder().decode(c); })();
  let base = "";
  for (const end = Date.now() + 20_000; !base && Date.now() < end; await Bun.sleep(25)) base = /listening on (http:\/\/\S+)/.exec(out)?.[1] ?? "";
  expect(base).not.toBe("");

  for (const [i, title] of ["First", "=SUM(A1)", "Third, with comma"].entries()) {
    const r = await fetch(`${base}/api/v1/notes`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ title, year: 2000 + i, tags: ["a"] }) });
    expect(r.status).toBe(201);
  }

  const jpeg = await sharp({ create: { width: 1200, height: 800, channels: 3, background: { r: 200, g: 30, b: 60 } } }).jpeg().toBuffer();
  const form = new FormData();
  form.append("file", new Blob([new Uint8Array(jpeg)], { type: "image/jpeg" }), "photo.jpg");
  const up = await fetch(`${base}/api/v1/.files`, { method: "POST", headers: auth, body: form });
  expect(up.status).toBe(201);
  const uuid = Object.keys(((await up.json()) as { files: Record<string, unknown> }).files)[0];
  expect(uuid).toMatch(/^[0-9a-f]{32}$/);
  const img = await fetch(`${base}/img/${uuid}/100w`, { headers: auth });
  expect(img.status).toBe(200);
  expect(img.headers.get("content-type")).toBe("image/webp");
  const meta = await sharp(Buffer.from(await img.arrayBuffer())).metadata();
  expect(meta.format).toBe("webp");
  expect([meta.width, meta.height]).toEqual([100, 67]);

  for (const format of ["json", "csv", "tsv"]) {
    const file = join(work, `notes.${format}`);
    const exp = await run(["export", "notes", "--format", format, "--out", file]);
    expect(exp.code).toBe(0);
    const other = join(work, `other-${format}`);
    await Bun.write(join(other, "resources/notes.json"), Bun.file(join(site, "resources/notes.json")));
    const imp = await run(["import", "notes", file, "--dir", other, "--json"], work);
    expect(imp.code).toBe(0);
    expect(JSON.parse(imp.stdout).stats).toMatchObject({ imported: 3, errors: 0, created: 3 });
    const back = await run(["export", "notes", "--format", "json", "--dir", other], work);
    const orig = await run(["export", "notes", "--format", "json"]);
    const records = (text: string) => {
      const parsed = JSON.parse(text) as Record<string, Record<string, unknown>>;
      delete parsed._meta;
      return Object.fromEntries(Object.entries(parsed).map(([k, v]) => [k, { uuid: v.uuid, title: v.title, year: v.year, tags: v.tags, _created: v._created }]));
    };
    expect(records(back.stdout)).toEqual(records(orig.stdout));
  }
}, 120_000);

test("a large import runs its reading thread from inside the binary", async () => {
  const file = join(work, "many.csv");
  const rows = Array.from({ length: 60_000 }, (_, i) => `Note ${i},${1900 + (i % 100)},"a long enough body for note ${i}, so that the file passes the worker threshold"`);
  await Bun.write(file, ["title,year,body", ...rows].join("\n"));
  expect(statSync(file).size).toBeGreaterThan(WORKER_FROM_BYTES);
  const other = join(work, "other-large");
  await Bun.write(join(other, "resources/notes.json"), JSON.stringify({ fields: { title: { type: "text" }, year: { type: "number" }, body: { type: "textarea" } } }));
  const imp = await run(["import", "notes", file, "--dir", other, "--json"], work);
  expect(imp.stderr).toBe("");
  expect(imp.code).toBe(0);
  expect(JSON.parse(imp.stdout).stats).toEqual({ imported: 60_000, errors: 0, created: 60_000, updated: 0, total: 60_000, matched: {} });
}, 120_000);

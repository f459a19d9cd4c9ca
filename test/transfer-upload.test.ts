import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { adminSite, serve } from "./helpers/site";
import { removeLeftovers } from "../src/core/leftovers";

let s: Awaited<ReturnType<typeof adminSite>>;
beforeAll(async () => { s = await adminSite({ defs: { notes: { fields: { title: { type: "text" } } } }, env: { RESD_MAX_UPLOAD: "4000" } }); });
afterAll(async () => { await s.cleanup(); });

const spools = () => (existsSync(join(s.dir, "data/tmp")) ? readdirSync(join(s.dir, "data/tmp")) : []);
const upload = (text: string, name = "notes.csv") => {
  const form = new FormData();
  form.append("file", new Blob([text], { type: "text/csv" }), name);
  return fetch(`${s.base}/api/v1/notes/import`, { method: "POST", headers: { authorization: `Bearer ${s.token}` }, body: form });
};

test("an HTTP import is streamed to a spool within RESD_MAX_UPLOAD and the spool is removed", async () => {
  const ok = await upload("title\nfirst\nsecond\n");
  expect(ok.status).toBe(200);
  expect(((await ok.json()) as { stats: { created: number } }).stats.created).toBe(2);
  expect(spools()).toEqual([]);
  const big = await upload(`title\n${"x".repeat(60)}\n`.repeat(100));
  expect(big.status).toBe(413);
  expect(((await big.json()) as { message: string }).message).toBe("UPLOAD_TOO_LARGE");
  expect(spools()).toEqual([]);
  const none = await fetch(`${s.base}/api/v1/notes/import`, { method: "POST", headers: { authorization: `Bearer ${s.token}` }, body: new FormData() });
  expect(none.status).toBe(400);
});

test("a JSON body larger than RESD_MAX_UPLOAD is refused with 413", async () => {
  const big = await s.apiJson("POST", "/api/v1/notes", { title: "x".repeat(5000) });
  expect(big.status).toBe(413);
  expect(big.body!.message).toBe("UPLOAD_TOO_LARGE");
  expect((await s.apiJson("POST", "/api/v1/notes", { title: "small" })).status).toBe(201);
});

test("temporary files left by a crash are removed at start; recent ones (a running CLI import) stay", () => {
  const dir = s.dir;
  mkdirSync(join(dir, "data/files/.tmp"), { recursive: true });
  mkdirSync(join(dir, "data/tmp"), { recursive: true });
  const old = [join(dir, "data/tmp/upload-old"), join(dir, "data/files/.tmp/blob-old"), join(dir, "data/import-old.spool")];
  for (const f of old) { writeFileSync(f, "x"); utimesSync(f, new Date(Date.now() - 2 * 3600_000), new Date(Date.now() - 2 * 3600_000)); }
  writeFileSync(join(dir, "data/import-running.spool"), "x");
  expect(removeLeftovers(dir).sort()).toEqual([...old].sort());
  expect(existsSync(join(dir, "data/import-running.spool"))).toBe(true);
});

test("resd serve runs the clean-up", async () => {
  const f = join(s.dir, "data/tmp/upload-crashed");
  writeFileSync(f, "x");
  utimesSync(f, new Date(Date.now() - 2 * 3600_000), new Date(Date.now() - 2 * 3600_000));
  const other = await serve(s.dir);
  await other.stop();
  expect(existsSync(f)).toBe(false);
});

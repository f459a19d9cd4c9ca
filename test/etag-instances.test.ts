/**
 * A list's ETag names the answer it came with, on every instance. An instance answers from its
 * kept pages until another instance's notice of a commit reaches it, while the change mark it reads
 * from the database counts that commit already: a tag built from the mark alone then named the old
 * page, and once the notice arrived the new page came with the same tag, so a client holding the
 * old page was told 304 Not Modified until the resource was written again.
 *
 * Two sites in this process on one PostgreSQL database, the first one's notices held back.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { copyFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { cli, makeSite } from "./helpers/site";
import { databasesOn } from "./helpers/psql";
import { PG } from "./helpers/pg-stores";
import { openSite } from "../src/core/open-site";
import { loadConfig } from "../src/core/config";
import { createApp } from "../src/http/app";
import type { Site } from "../src/core/site";
import { holdNotices } from "./helpers/hold-notices";

const EMAIL = "admin@example.com";
const defs = { notes: { fields: { title: { type: "text", required: true } } } };
const databases = databasesOn(PG || "postgres://127.0.0.1:1/none");
const dirs: string[] = [];
const sites: Site[] = [];
let token = "";
let apps: ReturnType<typeof createApp>[] = [];

beforeAll(async () => {
  if (!PG) throw new Error("test/etag-instances.test.ts needs a PostgreSQL server: set RESD_TEST_POSTGRES_URL (bash scripts/postgres.sh start)");
  const env = { RESD_DATABASE_URL: databases.create("resd_etag") };
  const [a, b] = [makeSite({ defs, store: "sqlite" }), makeSite({ defs, store: "sqlite" })];
  dirs.push(a, b);
  const add = await cli(a, ["user", "add", EMAIL, "--password", "admin-password", "--role", "admin", "--api"], { env });
  expect(add.code).toBe(0);
  // The same signing key on both: a token of one is good on the other.
  copyFileSync(join(a, ".env"), join(b, ".env"));
  token = (await cli(a, ["token", EMAIL], { env })).stdout.trim();
  for (const dir of dirs) {
    const site = await openSite(loadConfig({ dir, env: { ...process.env, ...env } }));
    await site.store.ready?.(10_000);
    sites.push(site);
  }
  apps = sites.map((s) => createApp(s));
});

afterAll(async () => {
  for (const s of sites) await s.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  databases.dropAll();
});

const PAGE = "/api/v1/notes?sort=_created%7Cdesc&limit=5";
async function call(i: number, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const r = await apps[i]!.handle(new Request(`http://localhost${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}), ...headers },
    body: body ? JSON.stringify(body) : undefined,
  }));
  return { status: r.status, etag: r.headers.get("etag"), body: r.status === 200 || r.status === 201 ? await r.json() as { notes: Record<string, { title: string }> } : null };
}
const titles = (r: { body: { notes: Record<string, { title: string }> } | null }) => Object.values(r.body!.notes).map((n) => n.title);

async function settled(i: number, want: string[]): Promise<void> {
  const deadline = Date.now() + 5000;
  while (JSON.stringify(titles(await call(i, "GET", PAGE))) !== JSON.stringify(want)) {
    if (Date.now() > deadline) throw new Error(`instance ${i} did not come to ${want.join(", ")}`);
    await Bun.sleep(20);
  }
}

test("a page answered before another instance's notice arrives and the page answered after it never share an ETag", async () => {
  // A full page of five (a page that may end the list is read again after a write, not revised).
  for (let i = 1; i <= 6; i++) expect((await call(0, "POST", "/api/v1/notes", { title: `old ${i}` })).status).toBe(201);
  await settled(1, ["old 6", "old 5", "old 4", "old 3", "old 2"]);
  // B's own create: its kept page takes the row, and the change mark it kept goes (read again at the next list).
  expect((await call(1, "POST", "/api/v1/notes", { title: "by b" })).status).toBe(201);
  const release = holdNotices(sites[0]!.store);
  let before: Awaited<ReturnType<typeof call>>;
  try {
    expect((await call(0, "POST", "/api/v1/notes", { title: "by a" })).status).toBe(201);
    // B has not heard of A's create: its kept page lacks the row, the mark in the database counts it.
    before = await call(1, "GET", PAGE);
    expect(titles(before)).toEqual(["by b", "old 6", "old 5", "old 4", "old 3"]);
  } finally {
    release();
  }
  await settled(1, ["by a", "by b", "old 6", "old 5", "old 4"]);
  const after = await call(1, "GET", PAGE);
  expect(after.etag).not.toBe(before.etag);
  // The client holding the old page is sent the new one, not told its copy is current.
  const revalidated = await call(1, "GET", PAGE, undefined, { "if-none-match": before.etag! });
  expect(revalidated.status).toBe(200);
  expect(titles(revalidated)).toEqual(["by a", "by b", "old 6", "old 5", "old 4"]);
  // The same answer has the same tag on both instances, and a held tag of it is still worth a 304 on either.
  const onA = await call(0, "GET", PAGE);
  expect(onA.etag).toBe(after.etag);
  for (const i of [0, 1]) expect((await call(i, "GET", PAGE, undefined, { "if-none-match": after.etag! })).status).toBe(304);
});

test("an update within the same second as the record's last write, its data as long as before, gives the page another ETag", async () => {
  // `_modified` has whole seconds: the two writes of the record must fall in one second (retried until they do).
  for (let attempt = 1; ; attempt++) {
    const x = await call(0, "POST", "/api/v1/notes", { title: `x ${attempt}` });
    await settled(1, [`x ${attempt}`, ...titles(await call(1, "GET", PAGE)).filter((t) => !t.startsWith("x ")).slice(0, 4)]).catch(() => {});
    while (Date.now() % 1000 > 100) await Bun.sleep(5);
    const uuid = Object.keys((x.body as unknown as { notes: Record<string, unknown> }).notes)[0]!;
    const first = await call(0, "PATCH", `/api/v1/notes/${uuid}`, { title: `aaa ${attempt}` });
    const want = titles(await call(0, "GET", PAGE));
    await settled(1, want);
    // B's own create: its page is revised and its mark read again at the next list.
    expect((await call(1, "POST", "/api/v1/notes", { title: `by b ${attempt}` })).status).toBe(201);
    const release = holdNotices(sites[0]!.store);
    let before: Awaited<ReturnType<typeof call>>;
    let second: Awaited<ReturnType<typeof call>>;
    try {
      second = await call(0, "PATCH", `/api/v1/notes/${uuid}`, { title: `bbb ${attempt}` });
      before = await call(1, "GET", PAGE);
    } finally {
      release();
    }
    const modified = (r: Awaited<ReturnType<typeof call>>) => (Object.values((r.body as unknown as { notes: Record<string, { _modified: number }> }).notes)[0]!)._modified;
    if (modified(first) !== modified(second)) {
      if (attempt >= 5) throw new Error("five attempts and the two writes never fell in one second");
      continue;
    }
    expect(titles(before)).toContain(`aaa ${attempt}`);
    const now = [`by b ${attempt}`, ...want.map((t) => (t === `aaa ${attempt}` ? `bbb ${attempt}` : t))].slice(0, 5);
    await settled(1, now);
    const revalidated = await call(1, "GET", PAGE, undefined, { "if-none-match": before.etag! });
    expect(revalidated.status).toBe(200);
    expect(titles(revalidated)).toEqual(now);
    return;
  }
});

test("a page answered before another instance's notice arrives names no Last-Modified that the page after it could match", async () => {
  const start = titles(await call(1, "GET", PAGE));
  // B's own create: its page is revised and its mark read again at the next list.
  expect((await call(1, "POST", "/api/v1/notes", { title: "ims by b" })).status).toBe(201);
  const release = holdNotices(sites[0]!.store);
  let before: Response;
  try {
    expect((await call(0, "POST", "/api/v1/notes", { title: "ims by a" })).status).toBe(201);
    // Answered in a later second than A's commit (an answer in the commit's own second names the one before).
    const second = Math.floor(Date.now() / 1000);
    while (Math.floor(Date.now() / 1000) === second) await Bun.sleep(10);
    before = await apps[1]!.handle(new Request(`http://localhost${PAGE}`, { headers: { authorization: `Bearer ${token}` } }));
    expect(titles({ body: (await before.json()) as { notes: Record<string, { title: string }> } })).toEqual(["ims by b", ...start.slice(0, 4)]);
  } finally {
    release();
  }
  await settled(1, ["ims by a", "ims by b", ...start.slice(0, 3)]);
  const revalidated = await call(1, "GET", PAGE, undefined, { "if-modified-since": before.headers.get("last-modified")! });
  expect(revalidated.status).toBe(200);
  expect(titles(revalidated)).toEqual(["ims by a", "ims by b", ...start.slice(0, 3)]);
});

test("while another resd process is connected, lists name a Last-Modified before the last three seconds, whatever this one's commits found; alone again, they do not", async () => {
  const b = sites[1]!.store as unknown as { othersThere: boolean; changeLead(): number; watch: { look(): Promise<void> } };
  b.othersThere = false;
  await b.watch.look();
  expect(b.changeLead()).toBe(3);
  const appB = apps[1]!;
  const lm = async () => Date.parse((await appB.handle(new Request(`http://localhost${PAGE}`, { headers: { authorization: `Bearer ${token}` } }))).headers.get("last-modified")!);
  expect((await call(0, "POST", "/api/v1/notes", { title: "lead" })).status).toBe(201);
  expect(await lm()).toBeLessThan((Math.floor(Date.now() / 1000) - 3) * 1000);
  // A leaves (its connections end with their backends): the next looks find B alone.
  await sites.shift()!.close();
  apps.shift();
  const deadline = Date.now() + 5000;
  for (;;) {
    await b.watch.look();
    if (b.changeLead() === 0 || Date.now() > deadline) break;
    await Bun.sleep(50);
  }
  expect(b.changeLead()).toBe(0);
  // Written now, the list names the previous second, as on SQLite.
  expect((await call(0, "POST", "/api/v1/notes", { title: "alone" })).status).toBe(201);
  const named = await lm();
  expect(named).toBeGreaterThanOrEqual((Math.floor(Date.now() / 1000) - 2) * 1000);
});

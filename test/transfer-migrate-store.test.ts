/**
 * resd migrate --to: a SQLite site's database copied into PostgreSQL (records, users with their
 * passwords, roles, history, the media library's records, queued jobs), served from there, and
 * copied back. Needs a PostgreSQL server: RESD_TEST_POSTGRES_URL (else RESD_TEST_DATABASE_URL);
 * without one the file fails.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { adminSite, cli, makeSite, serve } from "./helpers/site";
import { psql } from "./helpers/psql";

const PG = process.env.RESD_TEST_POSTGRES_URL || process.env.RESD_TEST_DATABASE_URL || "";


const notes = {
  languages: ["en", "de"],
  fields: {
    title: { type: "text", required: true, i18n: true },
    slug: { type: "text" },
    status: { type: "select", options: { new: "New", done: "Done" } },
  },
  unique: ["slug"],
  index: ["status"],
};

type Site = Awaited<ReturnType<typeof adminSite>>;
let s: Site;
const dbs: string[] = [];
let dbUrl = "";

function newDb(): string {
  const name = `resd_t_${crypto.randomUUID().replace(/-/g, "").slice(0, 16)}`;
  psql(PG, `CREATE DATABASE ${name}`);
  dbs.push(name);
  const u = new URL(PG);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Every record of a resource as the API lists it (system fields included), by uuid. */
async function listed(base: string, token: string, resource: string) {
  const r = await fetch(`${base}/api/v1/${resource}?limit=1000&sort=_created`, { headers: { authorization: `Bearer ${token}` } });
  expect(r.status).toBe(200);
  const list = ((await r.json()) as Record<string, any>)[resource.replace(/^\./, "")] as Record<string, unknown>;
  expect(Object.keys(list).length).toBeGreaterThan(0);
  return list;
}

let before: { notes: Record<string, unknown>; users: Record<string, unknown>; roles: Record<string, unknown>; files: Record<string, unknown>; history: unknown };
let changed = "";

beforeAll(async () => {
  if (!PG) throw new Error("test/transfer-migrate-store.test.ts needs a PostgreSQL server: set RESD_TEST_POSTGRES_URL (start one with `bash scripts/postgres.sh start`)");
  dbUrl = newDb();
  s = await adminSite({ defs: { notes }, store: "sqlite" });
  for (let i = 0; i < 30; i++) {
    const r = await s.apiJson("POST", "/api/v1/notes", { title: { en: `Note ${i}`, de: `Notiz ${i}` }, slug: `n-${i}`, status: i % 2 ? "done" : "new" });
    expect(r.status).toBe(201);
  }
  const all = Object.keys(await listed(s.base, s.token, "notes"));
  changed = all[0]!;
  expect((await s.apiJson("PATCH", `/api/v1/notes/${changed}`, { status: "done" })).status).toBe(200);
  expect((await s.apiJson("DELETE", `/api/v1/notes/${all[1]}`)).status).toBe(200);
  expect((await s.apiJson("POST", "/api/v1/roles", { name: "editor", permissions: ["view-notes", "edit-notes"] })).status).toBe(201);
  expect((await cli(s.dir, ["user", "add", "ed@example.com", "--password", "editor-password", "--role", "editor", "--api"])).code).toBe(0);
  const fd = new FormData();
  fd.append("file", new Blob(["hello file"], { type: "text/plain" }), "hello.txt");
  expect((await fetch(`${s.base}/api/v1/.files`, { method: "POST", body: fd, headers: { authorization: `Bearer ${s.token}` } })).status).toBe(201);
  before = {
    notes: await listed(s.base, s.token, "notes"),
    users: await listed(s.base, s.token, "users"),
    roles: await listed(s.base, s.token, "roles"),
    files: await listed(s.base, s.token, ".files"),
    history: (await s.apiJson("GET", `/api/v1/notes/${changed}/history`)).body!.history,
  };
}, 60_000);

afterAll(async () => {
  await s?.cleanup();
  for (const name of dbs) psql(PG, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
});

describe("resd migrate --to postgres://…", () => {
  test("refused while a server uses the site, and for a target that is not a database URL", async () => {
    const busy = await cli(s.dir, ["migrate", "--to", dbUrl]);
    expect(busy.code).toBe(2);
    expect(busy.stderr).toContain("stop it first");
    await s.stop();
    const bad = await cli(s.dir, ["migrate", "--to", "mysql://root:secret@db/x"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--to takes postgres://");
    expect(bad.stderr).not.toContain("secret");
    const down = await cli(s.dir, ["migrate", "--to", "postgres://nobody:secret@127.0.0.1:1/none"]);
    expect(down.code).toBe(1);
    expect(down.stderr).toContain("cannot use the database at postgres://nobody:***@127.0.0.1:1/none");
    // Nothing was made in the real target by the refusals.
    expect(psql(dbUrl, "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'r:%'")).toBe("0");
  });

  test("copies everything, verified; the site then runs on PostgreSQL with the same records, passwords, history and files", async () => {
    const r = await cli(s.dir, ["migrate", "--to", dbUrl, "--json"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.ok).toBe(true);
    expect(out.database).toMatchObject({ from: "sqlite", records: 29 + 2 + 2 + 1, history: 4, // two entries each for the changed and the deleted note
      jobs: 0, deadJobsLeft: 0 });
    expect(out.database.resources).toContainEqual({ name: "notes", records: 29 });
    expect(JSON.stringify(out)).not.toContain("nobody");
    // The copy's count deltas were folded before migrate left: the first server does not fold them.
    expect(psql(dbUrl, "SELECT count(*) FROM _resd_count_deltas")).toBe("0");

    const onPg = await serve(s.dir, { env: { RESD_DATABASE_URL: dbUrl } });
    try {
      // The old SQLite file is not used: the records come from PostgreSQL.
      expect(Number(psql(dbUrl, `SELECT count(*) FROM "r:notes"`))).toBe(29);
      expect(await listed(onPg.base, s.token, "notes")).toEqual(before.notes);
      expect(await listed(onPg.base, s.token, "users")).toEqual(before.users);
      expect(await listed(onPg.base, s.token, "roles")).toEqual(before.roles);
      expect(await listed(onPg.base, s.token, ".files")).toEqual(before.files);
      const h = await fetch(`${onPg.base}/api/v1/notes/${changed}/history`, { headers: { authorization: `Bearer ${s.token}` } });
      expect(((await h.json()) as Record<string, any>).history).toEqual(before.history);
      // Passwords moved as their hashes: the editor signs in with the same one.
      const login = await fetch(`${onPg.base}/api/v1/auth/token`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "ed@example.com", password: "editor-password" }) });
      expect(login.status).toBe(200);
      // Unique fields, indexes and search work there.
      const dup = await fetch(`${onPg.base}/api/v1/notes`, { method: "POST", headers: { authorization: `Bearer ${s.token}`, "content-type": "application/json" }, body: JSON.stringify({ title: { en: "x" }, slug: "n-5" }) });
      expect(dup.status).toBe(422);
      const found = await fetch(`${onPg.base}/api/v1/notes?search=notiz%2017&limit=10`, { headers: { authorization: `Bearer ${s.token}` } });
      expect(((await found.json()) as Record<string, any>).total).toBe(1);
      // The uploaded file is still where it was (DIR/data/files).
      const uuid = Object.keys(before.files)[0]!;
      const down = await fetch(`${onPg.base}/download/${uuid}`, { headers: { authorization: `Bearer ${s.token}` } });
      expect(await down.text()).toBe("hello file");
    } finally {
      await onPg.stop();
    }
  });

  test("a target that already holds records is refused; nothing changes in it", async () => {
    const again = await cli(s.dir, ["migrate", "--to", dbUrl]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("empty database only");
    expect(Number(psql(dbUrl, `SELECT count(*) FROM "r:notes"`))).toBe(29);
  });

  test("and back: --to sqlite from the PostgreSQL site into a fresh DIR/data/resd.db", async () => {
    const env = { RESD_DATABASE_URL: dbUrl };
    // The old file still holds the records: refused.
    const onOld = await cli(s.dir, ["migrate", "--to", "sqlite"], { env });
    expect(onOld.code).toBe(2);
    expect(onOld.stderr).toContain("empty database only");
    for (const f of ["resd.db", "resd.db-wal", "resd.db-shm"]) rmSync(join(s.dir, "data", f), { force: true });
    const back = await cli(s.dir, ["migrate", "--to", "sqlite", "--json"], { env });
    expect(back.stderr).toBe("");
    expect(back.code).toBe(0);
    expect(JSON.parse(back.stdout).database).toMatchObject({ to: "sqlite", records: 34, history: 4 });
    const local = await serve(s.dir);
    try {
      expect(await listed(local.base, s.token, "notes")).toEqual(before.notes);
      expect(await listed(local.base, s.token, "users")).toEqual(before.users);
      const found = await fetch(`${local.base}/api/v1/notes?search=notiz%2017&limit=10`, { headers: { authorization: `Bearer ${s.token}` } });
      expect(((await found.json()) as Record<string, any>).total).toBe(1);
      const counted = await fetch(`${local.base}/api/v1/notes?filter=status:done&limit=0`, { headers: { authorization: `Bearer ${s.token}` } });
      expect(((await counted.json()) as Record<string, any>).total).toBe(Object.values(before.notes).filter((n) => (n as { status: string }).status === "done").length);
    } finally {
      await local.stop();
    }
  });
});

describe("resd migrate --to: targets that are not empty, and copies that fail, change nothing", () => {
  /** A small SQLite site, not served. */
  async function smallSite(defs: Record<string, unknown> = { notes }) {
    const dir = makeSite({ defs, store: "sqlite" });
    expect((await cli(dir, ["user", "add", "a@example.com", "--password", "admin-password", "--role", "admin"])).code).toBe(0);
    return dir;
  }
  const schemaOf = (url: string) => psql(url, `SELECT version || ' ' || hash FROM _resd_schema WHERE resource = 'notes'`) + " | " +
    psql(url, `SELECT string_agg(indexname, ',' ORDER BY indexname) FROM pg_indexes WHERE tablename = 'r:notes'`);

  test("a database another site uses (other definitions, records) is refused before anything in it changes", async () => {
    const live = newDb();
    const other = await smallSite();
    expect((await cli(other, ["migrate", "--to", live])).code).toBe(0);
    const before = schemaOf(live);
    const different = await smallSite({ notes: { fields: { title: { type: "text" }, extra: { type: "number" } } } });
    const r = await cli(different, ["migrate", "--to", live]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("is not empty: it holds users records");
    expect(schemaOf(live)).toBe(before); // indexes and schema version as they were
    rmSync(other, { recursive: true, force: true });
    rmSync(different, { recursive: true, force: true });
  });

  test("a database holding tables that are not resd's is refused, and left without resd's tables", async () => {
    const foreign = newDb();
    psql(foreign, "CREATE TABLE customers (id int)");
    const dir = await smallSite();
    const r = await cli(dir, ["migrate", "--to", foreign]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("tables that are not resd's (customers)");
    expect(psql(foreign, "SELECT count(*) FROM pg_tables WHERE tablename LIKE '\\_resd%' OR tablename LIKE 'r:%'")).toBe("0");
    rmSync(dir, { recursive: true, force: true });
  });

  /** Writes one note straight into a fresh site's SQLite file (what the API would not let in) and copies the site. */
  async function copyWithRawNote(uuid: string, data: unknown, time: number) {
    const target = newDb();
    const dir = await smallSite();
    const db = new Database(join(dir, "data", "resd.db"));
    db.query(`INSERT INTO "r:notes" (uuid, data, _created, _modified) VALUES (?, ?, ?, ?)`).run(uuid, JSON.stringify(data), time, time);
    db.close();
    const r = await cli(dir, ["migrate", "--to", target]);
    rmSync(dir, { recursive: true, force: true });
    return { r, target };
  }

  test("a record the target cannot hold is named; nothing of the copy stays (records, history, jobs)", async () => {
    const { r, target } = await copyWithRawNote("bad-one", { title: { en: "nul \u0000" } }, 1);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("notes/bad-one");
    for (const t of ["r:notes", "r:users", "_resd_history", "_resd_jobs"]) expect(psql(target, `SELECT count(*) FROM "${t}"`)).toBe("0");
  });

  test("a copy that does not read back the same is rolled back before it commits", async () => {
    // A time PostgreSQL stores as a whole number: the copy differs from the source.
    const { r, target } = await copyWithRawNote("odd-time", { title: { en: "odd" } }, 1795000000.5);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("does not read back the same (notes: the records differ)");
    for (const t of ["r:notes", "r:users", "r:roles", "_resd_history", "_resd_jobs"]) expect(psql(target, `SELECT count(*) FROM "${t}"`)).toBe("0");
  });

  test("refused while another resd process (another folder, another host) uses the source database", async () => {
    const shared = newDb();
    const a = makeSite({ defs: { notes }, store: "sqlite" });
    const b = makeSite({ defs: { notes }, store: "sqlite" });
    const env = { RESD_DATABASE_URL: shared };
    expect((await cli(a, ["migrate"], { env })).code).toBe(0);
    const other = await serve(b, { env });
    try {
      const r = await cli(a, ["migrate", "--to", "sqlite"], { env });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`other resd processes are using this site's database`);
      expect(r.stderr).toContain(`/${other.proc.pid}`);
    } finally {
      await other.stop();
    }
    rmSync(a, { recursive: true, force: true });
    rmSync(b, { recursive: true, force: true });
  });
});

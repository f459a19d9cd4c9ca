/**
 * Behind PgBouncer in transaction mode: two resd servers reach PostgreSQL through a pooler that
 * hands each transaction whichever server connection is free (RESD_DATABASE_URL), and LISTEN over
 * a direct connection (RESD_DATABASE_DIRECT_URL). Records, lists, search, streams, imports, caches
 * across the instances and the query time budget work; the pooler holds far fewer server
 * connections than resd opens. Without the direct URL the server refuses to start, saying why.
 *
 * Needs a PostgreSQL server (RESD_TEST_POSTGRES_URL, else RESD_TEST_DATABASE_URL) and Debian's
 * `pgbouncer`; without them the file fails (it does not skip).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cli, makeSite, serve, type Server } from "./helpers/site";
import { psql } from "./helpers/psql";
import { freePort } from "./helpers/ports";

const PG = process.env.RESD_TEST_POSTGRES_URL || process.env.RESD_TEST_DATABASE_URL || "";
const POOL_SIZE = 3;
const defs = { notes: { fields: { title: { type: "text", required: true }, year: { type: "number" } } } };



let work = "";
let bouncer: ReturnType<typeof Bun.spawn> | undefined;
let bouncerPort = 0;
let dbName = "";
let direct = "";
let pooled = "";
let dir = "";
let dirB = "";
let A: Server | undefined;
let B: Server | undefined;
let token = "";

beforeAll(async () => {
  if (!PG) throw new Error("test/postgres-pooler.test.ts needs a PostgreSQL server: set RESD_TEST_POSTGRES_URL (or RESD_TEST_DATABASE_URL)");
  if (Bun.spawnSync(["sh", "-c", "command -v pgbouncer"]).exitCode !== 0) throw new Error("test/postgres-pooler.test.ts needs pgbouncer (Debian: apt-get install -y pgbouncer)");
  dbName = `resd_p_${crypto.randomUUID().replace(/-/g, "").slice(0, 16)}`;
  psql(PG, `CREATE DATABASE ${dbName}`);
  const u = new URL(PG);
  u.pathname = `/${dbName}`;
  direct = u.toString();

  work = mkdtempSync(join(tmpdir(), "resd-pooler-"));
  chmodSync(work, 0o777);
  bouncerPort = await freePort();
  writeFileSync(join(work, "pgbouncer.ini"), `[databases]
${dbName} = host=${u.hostname} port=${u.port || 5432} dbname=${dbName} user=${decodeURIComponent(u.username) || "postgres"}
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${bouncerPort}
unix_socket_dir =
auth_type = trust
auth_file = ${join(work, "users.txt")}
admin_users = ${decodeURIComponent(u.username) || "postgres"}
pool_mode = transaction
default_pool_size = ${POOL_SIZE}
max_client_conn = 200
ignore_startup_parameters = extra_float_digits
logfile = ${join(work, "pgbouncer.log")}
`);
  writeFileSync(join(work, "users.txt"), `"${decodeURIComponent(u.username) || "postgres"}" ""\n`);
  // PgBouncer will not run as root.
  const runAs = process.getuid?.() === 0 ? ["runuser", "-u", "postgres", "--"] : [];
  bouncer = Bun.spawn([...runAs, "pgbouncer", join(work, "pgbouncer.ini")], { stdout: "pipe", stderr: "pipe" });
  const p = new URL(direct);
  p.port = String(bouncerPort);
  pooled = p.toString();
  for (let i = 0; ; i++) {
    if (Bun.spawnSync(["psql", pooled, "-qXtAc", "SELECT 1"]).exitCode === 0) break;
    if (i > 100) throw new Error(`pgbouncer did not start: ${await new Response(bouncer.stderr as ReadableStream).text()}`);
    await Bun.sleep(100);
  }

  const env = { RESD_DATABASE_URL: pooled, RESD_DATABASE_DIRECT_URL: direct, RESD_QUERY_TIMEOUT: "2000" };
  dir = makeSite({ store: "sqlite", defs });
  dirB = makeSite({ store: "sqlite", defs });
  const add = await cli(dir, ["user", "add", "admin@example.com", "--password", "admin-password", "--role", "admin", "--api"], { env });
  if (add.code !== 0) throw new Error(`user add failed: ${add.stderr}`);
  Bun.spawnSync(["cp", join(dir, ".env"), join(dirB, ".env")]);
  token = (await cli(dir, ["token", "admin@example.com"], { env })).stdout.trim();
  A = await serve(dir, { env });
  B = await serve(dirB, { env });
}, 60_000);

afterAll(async () => {
  await A?.stop().catch(() => {});
  await B?.stop().catch(() => {});
  bouncer?.kill();
  await bouncer?.exited;
  if (dbName) psql(PG, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  for (const d of [dir, dirB, work]) if (d) rmSync(d, { recursive: true, force: true });
}, 30_000);

const call = async (s: Server, method: string, path: string, body?: unknown) => {
  const res = await fetch(s.base + path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, any>) : null, headers: res.headers };
};

describe("two instances behind PgBouncer in transaction mode", () => {
  test("writes, reads, lists, search, a streamed list and an import work; B's cached list sees A's writes", async () => {
    const path = "/api/v1/notes?limit=5&filter=year:2024";
    expect((await call(B!, "GET", path)).body!.total).toBe(0);
    const made = await Promise.all(Array.from({ length: 60 }, (_, i) => call(i % 2 ? A! : B!, "POST", "/api/v1/notes", { title: `pooled note ${i}`, year: 2024 })));
    expect(made.every((r) => r.status === 201)).toBe(true);
    const uuid = Object.keys(made[0]!.body!.notes)[0]!;
    expect((await call(A!, "PATCH", `/api/v1/notes/${uuid}`, { year: 2025 })).status).toBe(200);
    // Notices reach B over its direct connection: its cached total moves.
    const end = Date.now() + 2000;
    while ((await call(B!, "GET", path)).body!.total !== 59) {
      if (Date.now() > end) throw new Error("B's list did not see A's writes within two seconds");
      await Bun.sleep(50);
    }
    expect((await call(A!, "GET", `/api/v1/notes/${uuid}`)).body!.notes[uuid].year).toBe(2025);
    const found = await call(B!, "GET", `/api/v1/notes?search=${encodeURIComponent("pooled note 17")}`);
    expect(Object.values(found.body!.notes as Record<string, { title: string }>).map((n) => n.title)).toEqual(["pooled note 17"]);
    // An unpaged list is streamed through a cursor inside one transaction.
    const all = await call(A!, "GET", "/api/v1/notes");
    expect(Object.keys(all.body!.notes)).toHaveLength(60);
    // An import is one transaction holding a table lock.
    const form = new FormData();
    form.append("file", new Blob([JSON.stringify(Array.from({ length: 200 }, (_, i) => ({ title: `imported ${i}`, year: 1 })))], { type: "application/json" }), "n.json");
    const imp = await fetch(`${A!.base}/api/v1/notes/import`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: form });
    expect(imp.status).toBe(200);
    expect(psql(direct, `SELECT count(*) FROM "r:notes"`)).toBe("260");
  });

  test("the pooler holds at most its pool of server connections while both instances keep their own pools open", async () => {
    await Promise.all(Array.from({ length: 40 }, (_, i) => call(i % 2 ? A! : B!, "GET", `/api/v1/notes?limit=3&offset=${i}`)));
    const a = new URL(pooled);
    a.pathname = "/pgbouncer";
    const pools = Bun.spawnSync(["psql", a.toString(), "-qXtAF,", "-c", "SHOW POOLS"], { stdout: "pipe", stderr: "pipe" }).stdout.toString();
    const row = pools.split("\n").find((l) => l.startsWith(`${dbName},`))!;
    expect(row).toBeTruthy();
    // database,user,cl_active,cl_waiting,cl_active_cancel_req,cl_waiting_cancel_req,sv_active,sv_idle,sv_used,…
    const cols = row.split(",");
    const clients = Number(cols[2]) + Number(cols[3]);
    const servers = Number(cols[6]) + Number(cols[7]) + Number(cols[8]);
    expect(clients).toBeGreaterThan(POOL_SIZE);
    expect(servers).toBeLessThanOrEqual(POOL_SIZE);
  });

  test("the query time budget holds per transaction through the pooler (503, not a hung request)", async () => {
    // A write whose statement outlasts RESD_QUERY_TIMEOUT (2 s): the row lock held by psql makes it wait.
    const r = await call(A!, "POST", "/api/v1/notes", { title: "lock holder" });
    const uuid = Object.keys(r.body!.notes)[0]!;
    const holder = Bun.spawn(["psql", direct, "-qXc", `BEGIN; SELECT 1 FROM "r:notes" WHERE uuid = '${uuid}' FOR UPDATE; SELECT pg_sleep(4); COMMIT;`], { stdout: "ignore", stderr: "ignore" });
    await Bun.sleep(500);
    const t0 = Date.now();
    const w = await call(A!, "PATCH", `/api/v1/notes/${uuid}`, { year: 3 });
    expect(w.status).toBe(503);
    expect(Date.now() - t0).toBeLessThan(3500);
    await holder.exited;
  });

  test("through the pooler without RESD_DATABASE_DIRECT_URL the server does not start, and says what to set", async () => {
    const r = await cli(dir, ["migrate"], { env: { RESD_DATABASE_URL: pooled, RESD_DATABASE_DIRECT_URL: "" } });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("RESD_DATABASE_DIRECT_URL");
  });
});

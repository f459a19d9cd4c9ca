/**
 * Scale-out: two resd servers on one PostgreSQL database (RESD_DATABASE_URL) and one S3 bucket
 * (RESD_FILES_URL) behave as one site. Two site directories with the same definitions, extension
 * and token secret (DIR/.env copied) each serve one instance; records, cached lists, uploaded
 * files and /img variants, tokens, sessions, sign-outs, the job queue and login lockouts are shared.
 *
 * Needs a PostgreSQL server: RESD_TEST_POSTGRES_URL (else RESD_TEST_DATABASE_URL), e.g.
 * postgres://postgres@127.0.0.1:55432/postgres. Without one the file fails (it does not skip).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { startS3, type S3Server } from "./helpers/s3";
import { cli, makeSite, serve, type Server } from "./helpers/site";
import { PgStore } from "../src/core/store/postgres";
import { psql } from "./helpers/psql";

const PG = process.env.RESD_TEST_POSTGRES_URL || process.env.RESD_TEST_DATABASE_URL || "";
const NO_PG =
  "test/scale-out.test.ts needs a PostgreSQL server: set RESD_TEST_POSTGRES_URL (or RESD_TEST_DATABASE_URL), " +
  "e.g. RESD_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:55432/postgres; start one with `bash scripts/postgres.sh start`";

const EMAIL = "admin@example.com";
const PASSWORD = "admin-password";
const LOCKED_EMAIL = "locked@example.com";
const LOCKED_PASSWORD = "locked-password-1";
const MAX_FAILURES = 3;
const JOBS = 1000;

const defs = {
  notes: { fields: { title: { type: "text", required: true }, year: { type: "number" } } },
  tasks: { fields: { title: { type: "text", required: true } }, events: { create: ["job:count"] } },
  tickets: { fields: { title: { type: "text" }, status: { type: "select", options: { open: "Open", closed: "Closed", spam: "Spam" } } }, index: ["status"] },
};
/** One line per run of a `count` job: its id and the pid of the server that ran it. */
const EXT = `import { appendFileSync } from "node:fs";
export default function (api) {
  api.job("count", (job) => { appendFileSync(process.env.SCALE_OUT_JOB_LOG, \`\${job.id} \${process.pid}\\n\`); });
}
`;

const md5 = (b: Uint8Array) => new Bun.CryptoHasher("md5").update(b).digest("hex");


async function until<T>(what: string, fn: () => Promise<T | null | undefined | false> | T | null | undefined | false, ms: number, every = 25): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await Bun.sleep(every);
  }
}

type Reply = { status: number; headers: Headers; body: Record<string, any> | null };
async function call(base: string, method: string, path: string, opts: { body?: unknown; token?: string; headers?: Record<string, string> } = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}), ...opts.headers };
  if (opts.body !== undefined) headers["content-type"] ??= "application/json";
  const res = await fetch(base + path, { method, headers, redirect: "manual", body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const text = await res.text();
  let body: Record<string, any> | null = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = { raw: text };
  }
  return { status: res.status, headers: res.headers, body };
}

let s3: S3Server | undefined;
let adminDb = "";
let dbName = "";
let dbUrl = "";
let env: Record<string, string> = {};
let dirA = "";
let dirB = "";
let work = "";
let jobLog = "";
let A: Server | undefined;
let B: Server | undefined;
let token = "";

beforeAll(async () => {
  if (!PG) throw new Error(NO_PG);
  adminDb = PG;
  dbName = `resd_t_${crypto.randomUUID().replace(/-/g, "").slice(0, 16)}`;
  psql(adminDb, `CREATE DATABASE ${dbName}`);
  const u = new URL(adminDb);
  u.pathname = `/${dbName}`;
  dbUrl = u.toString();

  s3 = await startS3(["media"]);
  work = mkdtempSync(join(tmpdir(), "resd-scale-out-"));
  jobLog = join(work, "jobs.log");
  env = {
    RESD_DATABASE_URL: dbUrl,
    RESD_FILES_URL: "s3://media/shared",
    S3_ENDPOINT: s3.endpoint,
    S3_ACCESS_KEY_ID: "S3RVER",
    S3_SECRET_ACCESS_KEY: "S3RVER",
    S3_REGION: "us-east-1",
    RESD_LOGIN_MAX_FAILURES: String(MAX_FAILURES),
    RESD_LOGIN_LOCK: "60",
    // Idle workers poll every 50 ms, so each instance also takes jobs the other one queued. A poll
    // is not announced to the other instances (it changes nothing): the cache checks below still
    // need the notice of the other instance's commit.
    RESD_JOB_POLL: "50",
    RESD_JOB_CONCURRENCY: "4",
    RESD_JOB_BACKOFF: "50",
    SCALE_OUT_JOB_LOG: jobLog,
  };

  // Same definitions and extension in both directories; the signing key of A's .env copied to B.
  dirA = makeSite({ store: "sqlite", defs, files: { "ext/hooks.ts": EXT } });
  dirB = makeSite({ store: "sqlite", defs, files: { "ext/hooks.ts": EXT } });
  const add = await cli(dirA, ["user", "add", EMAIL, "--password", PASSWORD, "--role", "admin", "--api"], { env });
  if (add.code !== 0) throw new Error(`user add failed: ${add.stderr}`);
  const locked = await cli(dirA, ["user", "add", LOCKED_EMAIL, "--password", LOCKED_PASSWORD, "--role", "admin", "--api"], { env });
  if (locked.code !== 0) throw new Error(`user add failed: ${locked.stderr}`);
  if (!existsSync(join(dirA, ".env"))) throw new Error("the first CLI command wrote no .env");
  copyFileSync(join(dirA, ".env"), join(dirB, ".env"));
  const tok = await cli(dirA, ["token", EMAIL], { env });
  if (tok.code !== 0) throw new Error(`token failed: ${tok.stderr}`);
  token = tok.stdout.trim();

  await startBoth();
}, 60_000);

/** Serves A, then B (the second finds the schema made). */
async function startBoth() {
  await A?.stop();
  await B?.stop();
  A = await serve(dirA, { env });
  B = await serve(dirB, { env });
}

afterAll(async () => {
  await A?.stop().catch(() => {});
  await B?.stop().catch(() => {});
  await s3?.stop().catch(() => {});
  if (dbName) {
    try {
      psql(adminDb, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    } catch (e) {
      console.error(String(e));
    }
  }
  for (const d of [dirA, dirB, work]) if (d) rmSync(d, { recursive: true, force: true });
}, 30_000);

describe("two instances on one database and one bucket", () => {
  test("a record created on A is read on B at once, and B's cached list shows it within a second", async () => {
    // B's list, asked twice so the page and the total are cached there.
    const before = await call(B!.base, "GET", "/api/v1/notes?limit=50", { token });
    expect(before.status).toBe(200);
    const again = await call(B!.base, "GET", "/api/v1/notes?limit=50", { token });
    expect(again.body!.total).toBe(before.body!.total);
    const total0 = before.body!.total as number;

    const created = await call(A!.base, "POST", "/api/v1/notes", { token, body: { title: "written on A", year: 2026 } });
    expect(created.status).toBe(201);
    const uuid = Object.keys(created.body!.notes)[0]!;

    const read = await call(B!.base, "GET", `/api/v1/notes/${uuid}`, { token });
    expect(read.status).toBe(200);
    expect(read.body!.notes[uuid]).toMatchObject({ uuid, title: "written on A", year: 2026 });

    const t0 = Date.now();
    const list = await until("B's list to show the record written on A", async () => {
      const r = await call(B!.base, "GET", "/api/v1/notes?limit=50", { token });
      return r.body!.total === total0 + 1 && r.body!.notes[uuid] ? r : null;
    }, 1000);
    expect(Date.now() - t0).toBeLessThan(1500);
    expect(list.body!.count).toBe(total0 + 1);

    // And the other way round: a change on B reaches A's cache.
    const cachedOnA = await call(A!.base, "GET", "/api/v1/notes?limit=50", { token });
    expect(cachedOnA.body!.notes[uuid].title).toBe("written on A");
    expect((await call(B!.base, "PATCH", `/api/v1/notes/${uuid}`, { token, body: { title: "changed on B" } })).status).toBe(200);
    await until("A's list to show B's change", async () => (await call(A!.base, "GET", "/api/v1/notes?limit=50", { token })).body!.notes[uuid].title === "changed on B", 1000);
  });

  test("an image uploaded on A is downloaded on B with the same bytes; B makes an /img WebP of it", async () => {
    const jpeg = new Uint8Array(await sharp({ create: { width: 320, height: 240, channels: 3, background: { r: 10, g: 120, b: 200 } } }).jpeg().toBuffer());
    const fd = new FormData();
    fd.append("file", new Blob([jpeg as Uint8Array<ArrayBuffer>], { type: "image/jpeg" }), "photo.jpg");
    const up = await fetch(`${A!.base}/api/v1/.files`, { method: "POST", body: fd, headers: { authorization: `Bearer ${token}` } });
    expect(up.status).toBe(201);
    const uuid = Object.keys(((await up.json()) as { files: Record<string, unknown> }).files)[0]!;
    expect(uuid).toBe(md5(jpeg));

    const auth = { authorization: `Bearer ${token}` };
    const listed = await call(B!.base, "GET", `/api/v1/.files/${uuid}`, { token });
    expect(listed.status).toBe(200);
    const down = await fetch(`${B!.base}/download/${uuid}`, { headers: auth });
    expect(down.status).toBe(200);
    expect(new Uint8Array(await down.arrayBuffer())).toEqual(jpeg);

    const img = await fetch(`${B!.base}/img/${uuid}/100w`, { headers: auth });
    expect(img.status).toBe(200);
    expect(img.headers.get("content-type")).toBe("image/webp");
    const meta = await sharp(new Uint8Array(await img.arrayBuffer())).metadata();
    expect(meta.format).toBe("webp");
    expect(meta.width).toBe(100);
    // The variant B made is in the bucket: A serves the same one.
    const fromA = await fetch(`${A!.base}/img/${uuid}/100w`, { headers: auth });
    expect(fromA.status).toBe(200);
    expect((await sharp(new Uint8Array(await fromA.arrayBuffer())).metadata()).width).toBe(100);
  });

  test("a token issued on A works on B; a session started on A works on B, and signing out on A ends it on B", async () => {
    const issued = await call(A!.base, "POST", "/api/v1/auth/token", { body: { email: EMAIL, password: PASSWORD } });
    expect(issued.status).toBe(200);
    const t = issued.body!.token as string;
    expect(typeof t).toBe("string");
    expect((await call(B!.base, "GET", "/api/v1/notes?limit=1", { token: t })).status).toBe(200);
    // Renewed on B, used on A.
    const renewed = await call(B!.base, "GET", "/api/v1/auth/token", { token: t });
    expect(renewed.status).toBe(200);
    expect((await call(A!.base, "GET", "/api/v1/notes?limit=1", { token: renewed.body!.token })).status).toBe(200);
    // The CLI's token (made in A's directory) on B.
    expect((await call(B!.base, "GET", "/api/v1/notes?limit=1", { token })).status).toBe(200);

    const signIn = await call(A!.base, "POST", "/api/v1/session", { body: { email: EMAIL, password: PASSWORD } });
    expect(signIn.status).toBe(200);
    const cookie = (signIn.headers.get("set-cookie") ?? "").split(";")[0]!;
    expect(cookie).toMatch(/^resd_session=[\w-]{43}$/);
    const h = { cookie };
    const onB = await call(B!.base, "GET", "/api/v1/session", { headers: h });
    expect(onB.status).toBe(200);
    expect(onB.body!.user.email).toBe(EMAIL);
    expect((await call(B!.base, "GET", "/api/v1/notes?limit=1", { headers: h })).status).toBe(200);
    // B has the session cached now; A ends it.
    expect((await call(B!.base, "GET", "/api/v1/session", { headers: h })).status).toBe(200);
    const out = await call(A!.base, "DELETE", "/api/v1/session", { headers: h });
    expect(out.status).toBe(200);
    expect((await call(A!.base, "GET", "/api/v1/session", { headers: h })).status).toBe(401);
    await until("the session to end on B", async () => (await call(B!.base, "GET", "/api/v1/session", { headers: h })).status === 401, 1000);
    // The old cookie is an anonymous visitor on B now (as on one instance: 403, not the user's 200).
    expect((await call(B!.base, "GET", "/api/v1/notes?limit=1", { headers: h })).status).toBe(403);
  });

  test("totals stay exact under concurrent creates, updates and deletes on both instances (compared with COUNT(*))", async () => {
    const statuses = ["open", "closed", "spam"];
    const pick = (i: number) => statuses[(i * 7) % 3]!;
    const made: string[] = [];
    // Creates on both at once, in parallel batches.
    await Promise.all(Array.from({ length: 8 }, async (_, w) => {
      for (let i = 0; i < 40; i++) {
        const s = w % 2 ? B! : A!;
        const r = await call(s.base, "POST", "/api/v1/tickets", { token, body: { title: `t${w}-${i}`, status: pick(i + w) } });
        expect(r.status).toBe(201);
        made.push(Object.keys(r.body!.tickets)[0]!);
      }
    }));
    // Status changes and deletes, again from both, while pages and totals are read (cached) on both.
    await Promise.all([
      ...made.slice(0, 120).map((uuid, i) => call((i % 2 ? A! : B!).base, "PATCH", `/api/v1/tickets/${uuid}`, { token, body: { status: pick(i + 1) } })),
      ...made.slice(120, 180).map((uuid, i) => call((i % 2 ? B! : A!).base, "DELETE", `/api/v1/tickets/${uuid}`, { token })),
      ...Array.from({ length: 40 }, (_, i) => call((i % 2 ? A! : B!).base, "GET", `/api/v1/tickets?limit=5&filter=status:${pick(i)}`, { token })),
    ]);
    const exact = (where: string) => Number(psql(dbUrl, `SELECT count(*) FROM "r:tickets" ${where}`));
    expect(exact("")).toBe(320 - 60);
    for (const s of [A!, B!]) {
      expect((await call(s.base, "GET", "/api/v1/tickets?limit=1", { token })).body!.total).toBe(exact(""));
      for (const st of statuses) {
        expect((await call(s.base, "GET", `/api/v1/tickets?limit=1&filter=status:${st}`, { token })).body!.total).toBe(exact(`WHERE data->>'status' = '${st}'`));
        expect((await call(s.base, "GET", `/api/v1/tickets?limit=1&filter=status:!${st}`, { token })).body!.total).toBe(exact(`WHERE data->>'status' IS DISTINCT FROM '${st}'`));
      }
      expect((await call(s.base, "GET", "/api/v1/tickets?limit=1&filter=status:open||spam", { token })).body!.total).toBe(exact(`WHERE data->>'status' IN ('open', 'spam')`));
    }
    // The instances fold the counts' deltas (each second, one at a time): the totals stay the same.
    await until("the deltas to be folded", () => psql(dbUrl, "SELECT count(*) FROM _resd_count_deltas") === "0", 5000, 100);
    for (const st of statuses) {
      expect((await call(B!.base, "GET", `/api/v1/tickets?limit=1&filter=status:${st}`, { token })).body!.total).toBe(exact(`WHERE data->>'status' = '${st}'`));
    }
  });

  test("an account locked by failed logins on A is refused on B, even with the right password", async () => {
    const wrong = { email: LOCKED_EMAIL, password: "not-the-password" };
    for (let i = 1; i <= MAX_FAILURES; i++) {
      const r = await call(A!.base, "POST", "/api/v1/auth/token", { body: wrong });
      expect(r.status).toBe(401);
    }
    const onA = await call(A!.base, "POST", "/api/v1/auth/token", { body: wrong });
    expect(onA.status).toBe(429);
    expect(onA.body!.message).toBe("TOO_MANY_REQUESTS");

    const right = { email: LOCKED_EMAIL, password: LOCKED_PASSWORD };
    const onB = await call(B!.base, "POST", "/api/v1/auth/token", { body: right });
    expect(onB.status).toBe(429);
    expect(onB.body!.message).toBe("TOO_MANY_REQUESTS");
    expect(Number(onB.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(Number(onB.headers.get("retry-after"))).toBeLessThanOrEqual(60);
    const session = await call(B!.base, "POST", "/api/v1/session", { body: right });
    expect(session.status).toBe(429);
    // The other account is not affected.
    expect((await call(B!.base, "POST", "/api/v1/auth/token", { body: { email: EMAIL, password: PASSWORD } })).status).toBe(200);
  });

  test(`${JOBS} jobs queued by writes on both instances each run exactly once, some on each`, async () => {
    const half = JOBS / 2;
    const csv = (who: string, from: number, n: number) =>
      ["title", ...Array.from({ length: n }, (_, i) => `task ${who} ${from + i}`)].join("\n") + "\n";
    const importOn = async (s: Server, who: string, from: number, n: number) => {
      const fd = new FormData();
      fd.append("file", new Blob([csv(who, from, n)], { type: "text/csv" }), `${who}-${from}.csv`);
      const res = await fetch(`${s.base}/api/v1/tasks/import?match=none`, { method: "POST", body: fd, headers: { authorization: `Bearer ${token}` } });
      const body = (await res.json()) as Record<string, any>;
      expect(res.status).toBe(200);
      expect(body.stats).toMatchObject({ imported: n, created: n, errors: 0 });
    };
    // Five imports of 100 rows on each, interleaved, so both workers see new work while busy.
    const chunk = 100;
    const writes: Promise<void>[] = [];
    for (let i = 0; i < half; i += chunk) {
      writes.push(importOn(A!, "A", i, chunk));
      writes.push(importOn(B!, "B", i, chunk));
    }
    await Promise.all(writes);
    expect((await call(B!.base, "GET", "/api/v1/tasks?limit=0", { token })).body!.total).toBe(JOBS);
    expect(Number(psql(dbUrl, "SELECT count(*) FROM _resd_jobs WHERE type = 'count'"))).toBe(JOBS);

    const lines = await until("every job to be done", () => {
      const open = Number(psql(dbUrl, "SELECT count(*) FROM _resd_jobs WHERE type = 'count' AND state <> 'done'"));
      if (open > 0) return null;
      return readFileSync(jobLog, "utf8").trim().split("\n").filter(Boolean);
    }, 45_000, 100);
    // Settle: a job run twice would have written its second line by now.
    await Bun.sleep(300);
    const final = readFileSync(jobLog, "utf8").trim().split("\n").filter(Boolean);
    expect(final.length).toBe(lines.length);

    const runs = new Map<string, number>();
    const byPid = new Map<string, number>();
    for (const line of final) {
      const [id, pid] = line.split(" ");
      runs.set(id!, (runs.get(id!) ?? 0) + 1);
      byPid.set(pid!, (byPid.get(pid!) ?? 0) + 1);
    }
    const ids = psql(dbUrl, "SELECT id FROM _resd_jobs WHERE type = 'count' ORDER BY id").split("\n");
    expect(ids.length).toBe(JOBS);
    expect([...runs.entries()].filter(([, n]) => n !== 1)).toEqual([]);
    expect([...runs.keys()].sort()).toEqual([...ids].sort());
    expect(final.length).toBe(JOBS);
    expect(Number(psql(dbUrl, "SELECT count(*) FROM _resd_jobs WHERE type = 'count' AND state = 'done' AND attempts = 1"))).toBe(JOBS);
    // Both instances took part.
    expect([...byPid.keys()].sort()).toEqual([String(A!.proc.pid), String(B!.proc.pid)].sort());
    for (const n of byPid.values()) expect(n).toBeGreaterThan(0);
  }, 60_000);

  test("an instance whose definition is older than the stored schema stops serving that resource as soon as another one changes it (error in its log); it serves again once its file matches", async () => {
    const older = JSON.parse(readFileSync(join(dirA, "resources", "notes.json"), "utf8"));
    const newer = { ...older, fields: { ...older.fields, summary: { type: "text" } } };
    const version = () => Number(psql(dbUrl, "SELECT version FROM _resd_schema WHERE resource = 'notes'"));
    const v1 = version();
    // A's file changes while both run: A moves notes on; B hears of it and refuses at once.
    writeFileSync(join(dirA, "resources", "notes.json"), JSON.stringify(newer));
    await until("A to serve the new field", async () => (await call(A!.base, "POST", "/api/v1/notes", { token, body: { title: "new field", summary: "kept" } })).status === 201, 5000, 100);
    expect(version()).toBe(v1 + 1);
    const refused = await until("B to refuse notes", async () => {
      const r = await call(B!.base, "GET", "/api/v1/notes?limit=1", { token });
      return r.status === 503 ? r : null;
    }, 3000, 50);
    expect(refused.body!.message).toBe("SERVICE_UNAVAILABLE");
    expect(refused.body!.details).toContain(`schema version ${v1 + 1}`);
    expect(refused.body!.details).not.toContain(dirB); // no server path to the client
    expect(B!.errors()).toMatch(/resource not served.*resource=notes.*newer than this instance's definition/);
    expect((await call(B!.base, "POST", "/api/v1/notes", { token, body: { title: "from the old definition" } })).status).toBe(503);
    // Only that resource: the rest is served.
    expect((await call(B!.base, "GET", "/api/v1/tasks?limit=1", { token })).status).toBe(200);
    expect(version()).toBe(v1 + 1); // B did not take the schema back

    // Rolling A back to the old file by copying it: an older version, refused there too ...
    writeFileSync(join(dirA, "resources", "notes.json"), JSON.stringify(older));
    await until("A to refuse notes", async () => (await call(A!.base, "GET", "/api/v1/notes?limit=1", { token })).status === 503, 3000, 50);
    const plain = await cli(dirA, ["migrate"], { env });
    expect(plain.code).toBe(2);
    expect(plain.stderr).toContain("resd migrate --rollback");
    // ... until the admin says so: both instances (both on the old file now) serve again.
    const rollback = await cli(dirA, ["migrate", "--rollback"], { env });
    expect(rollback.code).toBe(0);
    expect(rollback.stdout).toContain(`notes: updated schema version ${v1 + 2} (the definition of an earlier version again: rolled back)`);
    for (const s of [A!, B!]) await until("notes to be served again", async () => (await call(s.base, "GET", "/api/v1/notes?limit=1", { token })).status === 200, 3000, 50);
    expect(version()).toBe(v1 + 2);
  });
});

describe("writes on two instances at once (grouped transactions, change marks by slot)", () => {
  test("400 concurrent creates on both instances each land once; totals, lists and ETags agree on both and move with every commit", async () => {
    const before = Number(psql(dbUrl, `SELECT count(*) FROM "r:notes"`));
    const made = new Set<string>();
    await Promise.all(Array.from({ length: 16 }, async (_, w) => {
      for (let i = 0; i < 25; i++) {
        const r = await call((w % 2 ? B! : A!).base, "POST", "/api/v1/notes", { token, body: { title: `c${w}-${i}`, year: w } });
        expect(r.status).toBe(201);
        made.add(Object.keys(r.body!.notes)[0]!);
      }
    }));
    expect(made.size).toBe(400);
    expect(Number(psql(dbUrl, `SELECT count(*) FROM "r:notes"`))).toBe(before + 400);
    expect(Number(psql(dbUrl, `SELECT count(DISTINCT data->>'title') FROM "r:notes" WHERE data->>'title' ~ '^c[0-9]+-[0-9]+$'`))).toBe(400);
    // Every create is readable on both, and both count them all.
    for (const s of [A!, B!]) {
      expect((await call(s.base, "GET", "/api/v1/notes?limit=1", { token })).body!.total).toBe(before + 400);
      for (const uuid of [...made].slice(0, 40)) expect((await call(s.base, "GET", `/api/v1/notes/${uuid}`, { token })).status).toBe(200);
    }
    // The change mark is read from the database: the same list has the same ETag on both instances.
    const path = "/api/v1/notes?limit=5&sort=year";
    const tagA = (await call(A!.base, "GET", path, { token })).headers.get("etag")!;
    const tagB = (await call(B!.base, "GET", path, { token })).headers.get("etag")!;
    expect(tagA).toBeTruthy();
    expect(tagB).toBe(tagA);
    expect((await call(B!.base, "GET", path, { token, headers: { "if-none-match": tagA } })).status).toBe(304);
    // One more commit on A: the tag moves on both, and the old one no longer answers 304 anywhere.
    expect((await call(A!.base, "POST", "/api/v1/notes", { token, body: { title: "one more" } })).status).toBe(201);
    for (const s of [A!, B!]) {
      const r = await until(`a new ETag on ${s === A ? "A" : "B"}`, async () => {
        const r = await call(s.base, "GET", path, { token, headers: { "if-none-match": tagA } });
        return r.status === 200 ? r : null;
      }, 2000);
      expect(r.headers.get("etag")).not.toBe(tagA);
      expect(r.body!.total).toBe(before + 401);
    }
  });

  test("creates racing for one uuid (on both instances, among other creates): exactly one 201, the others 409, nothing else lost", async () => {
    const uuid = "01a22000-0000-7000-8000-00000000abcd";
    const results = await Promise.all([
      ...Array.from({ length: 12 }, (_, i) => call((i % 2 ? A! : B!).base, "POST", "/api/v1/notes", { token, body: { uuid, title: `race ${i}` } })),
      ...Array.from({ length: 24 }, (_, i) => call((i % 2 ? B! : A!).base, "POST", "/api/v1/notes", { token, body: { title: `bystander ${i}` } })),
    ]);
    const racers = results.slice(0, 12).map((r) => r.status);
    expect(racers.filter((s) => s === 201)).toHaveLength(1);
    expect(racers.filter((s) => s === 409)).toHaveLength(11);
    for (const r of results.slice(0, 12)) if (r.status === 409) expect(r.body!.message).toBe("RESOURCE_EXISTS");
    expect(results.slice(12).every((r) => r.status === 201)).toBe(true);
    expect(psql(dbUrl, `SELECT count(*) FROM "r:notes" WHERE uuid = '${uuid}'`)).toBe("1");
    expect(psql(dbUrl, `SELECT count(*) FROM "r:notes" WHERE data->>'title' LIKE 'bystander %'`)).toBe("24");
    // The winner's title is the one stored.
    const winner = results.slice(0, 12).findIndex((r) => r.status === 201);
    expect(psql(dbUrl, `SELECT data->>'title' FROM "r:notes" WHERE uuid = '${uuid}'`)).toBe(`race ${winner}`);
  });

  test("a failing write among many grouped ones fails alone: a 404 update and a 412 precondition leave the others' writes whole", async () => {
    const made = await Promise.all(Array.from({ length: 10 }, (_, i) => call(A!.base, "POST", "/api/v1/notes", { token, body: { title: `g${i}`, year: 1 } })));
    const uuids = made.map((r) => Object.keys(r.body!.notes)[0]!);
    const results = await Promise.all([
      ...uuids.map((u, i) => call(A!.base, "PATCH", `/api/v1/notes/${u}`, { token, body: { year: 100 + i } })),
      call(A!.base, "PATCH", "/api/v1/notes/01a22000-0000-7000-8000-0000000f0404", { token, body: { year: 5 } }),
      call(A!.base, "PATCH", `/api/v1/notes/${uuids[0]}`, { token, body: { year: 7 }, headers: { "if-match": 'W/"not-the-tag"' } }),
      ...Array.from({ length: 10 }, (_, i) => call(A!.base, "POST", "/api/v1/notes", { token, body: { title: `h${i}` } })),
    ]);
    expect(results.slice(0, 10).map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(results[10]!.status).toBe(404);
    expect(results[11]!.status).toBe(412);
    expect(results.slice(12).every((r) => r.status === 201)).toBe(true);
    for (const [i, u] of uuids.entries()) expect(psql(dbUrl, `SELECT data->>'year' FROM "r:notes" WHERE uuid = '${u}'`)).toBe(String(100 + i));
  });

  test("a commit no instance announced (its instance died before telling) reaches the others' cached lists within two seconds", async () => {
    const path = "/api/v1/notes?limit=1&filter=year:4242";
    for (const s of [A!, B!]) expect((await call(s.base, "GET", path, { token })).body!.total).toBe(0);
    // Written straight into the database, with its change mark, as a process that then died would.
    psql(dbUrl, `BEGIN; INSERT INTO "r:notes" (uuid, data, _created, _modified) VALUES ('01a22000-0000-7000-8000-00000000dead', '{"title":"orphan","year":4242}', 1, 1);
      UPDATE _resd_changes SET n = n + 1 WHERE resource = 'notes' AND slot = (SELECT min(slot) FROM _resd_changes WHERE resource = 'notes'); COMMIT;`);
    for (const s of [A!, B!]) await until("the unannounced commit", async () => (await call(s.base, "GET", path, { token })).body!.total === 1, 2500, 100);
  });
});

describe("upkeep shared by the instances", () => {
  test("the hourly history purge runs once for all instances: the others skip it for the rest of the hour", async () => {
    const one = await PgStore.open(dbUrl);
    const two = await PgStore.open(dbUrl);
    try {
      const now = Date.now() + 2 * 3600_000; // past any purge the servers above made at start
      const results = await Promise.all([one.purgeHistory(0, now), two.purgeHistory(0, now)]);
      expect(results.filter((r) => r === null).length).toBe(1);
      expect(results.filter((r) => typeof r === "number").length).toBe(1);
      expect(await two.purgeHistory(0, now + 30 * 60_000)).toBeNull();
      expect(await two.purgeHistory(0, now + 56 * 60_000)).toBe(0);
    } finally {
      await one.close();
      await two.close();
    }
  });
});

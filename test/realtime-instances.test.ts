/**
 * Realtime across instances: two resd servers on one PostgreSQL database (two site directories with
 * the same definitions and token secret, as test/scale-out.test.ts builds them). A change on one
 * reaches the streams of the other, records too large for a notification included.
 *
 * Needs a PostgreSQL server: RESD_TEST_POSTGRES_URL (else RESD_TEST_DATABASE_URL), e.g.
 * postgres://postgres@127.0.0.1:55432/postgres. Without one the file fails (it does not skip).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cli, makeSite, serve, type Server } from "./helpers/site";
import { call, tokenFor } from "./helpers/access";
import { openSse, type SseEvent } from "./helpers/sse";
import { psql } from "./helpers/psql";

const PG = process.env.RESD_TEST_POSTGRES_URL || process.env.RESD_TEST_DATABASE_URL || "";
const EMAIL = "admin@example.com";
const PASSWORD = "admin-password";
const defs = {
  notes: { fields: { title: { type: "text" }, body: { type: "textarea" }, secret: { type: "text" }, status: { type: "select", options: { new: "New", old: "Old" } } }, hidden: "secret" },
  tasks: { fields: { title: { type: "text" } } },
};

let dbUrl = "";
let dirA = "";
let dirB = "";
let A: Server;
let B: Server;
let token = "";
let env: Record<string, string> = {};


beforeAll(async () => {
  if (!PG) throw new Error("test/realtime-instances.test.ts needs a PostgreSQL server: set RESD_TEST_POSTGRES_URL, e.g. postgres://postgres@127.0.0.1:55432/postgres (bash scripts/postgres.sh start)");
  const name = `resd_t_${crypto.randomUUID().replace(/-/g, "").slice(0, 16)}`;
  psql(PG, `CREATE DATABASE ${name}`);
  const u = new URL(PG);
  u.pathname = `/${name}`;
  dbUrl = u.toString();
  env = { RESD_DATABASE_URL: dbUrl, RESD_REALTIME_BULK: "5" };
  dirA = makeSite({ store: "sqlite", defs });
  dirB = makeSite({ store: "sqlite", defs });
  const add = await cli(dirA, ["user", "add", EMAIL, "--password", PASSWORD, "--role", "admin", "--api"], { env });
  if (add.code !== 0) throw new Error(`user add failed: ${add.stderr}`);
  copyFileSync(join(dirA, ".env"), join(dirB, ".env"));
  A = await serve(dirA, { env });
  B = await serve(dirB, { env });
  token = await tokenFor(A.base, EMAIL, PASSWORD);
}, 60_000);

afterAll(async () => {
  await A?.stop();
  await B?.stop();
  for (const d of [dirA, dirB]) if (d) rmSync(d, { recursive: true, force: true });
  if (dbUrl) psql(PG, `DROP DATABASE IF EXISTS ${new URL(dbUrl).pathname.slice(1)} WITH (FORCE)`);
});

const on = (server: Server, what: string, bearer = token) => openSse(`${server.base}/api/v1/realtime?subscribe=${encodeURIComponent(what)}`, { authorization: `Bearer ${bearer}` });
const ofKind = (kind: string, uuid?: string) => (e: SseEvent) => e.event === kind && (uuid === undefined || e.json.uuid === uuid);
const created = (uuid: string) => (e: SseEvent) => e.event === "create" && e.json.uuid === uuid;
const post = async (server: Server, resource: string, body: unknown) => {
  const r = await call(server.base, "POST", `/api/v1/${resource}`, { token, body });
  expect(r.status).toBe(201);
  return Object.keys(r.body![resource])[0];
};

describe("two instances on one PostgreSQL database", () => {
  test("a write on A reaches streams on B and on A, once each, with the record as the API returns it", async () => {
    const onB = await on(B, "notes");
    const onA = await on(A, "notes");
    await onB.next((e) => e.event === "connect");
    await onA.next((e) => e.event === "connect");
    const uuid = await post(A, "notes", { title: "from A", secret: "never" });
    const atB = await onB.next(created(uuid));
    const atA = await onA.next(created(uuid));
    expect(atB.json.record).toEqual(atA.json.record);
    expect(atB.data).not.toContain("never");
    // And the other way round, in order.
    const u2 = await post(B, "notes", { title: "from B" });
    await call(B.base, "PUT", `/api/v1/notes/${u2}`, { token, body: { title: "from B, changed" } });
    await onA.next((e) => e.event === "update" && e.json.uuid === u2);
    expect(onA.events.filter((e) => e.json.uuid === u2).map((e) => e.event)).toEqual(["create", "update"]);
    const ids = onA.events.filter((e) => e.json.id).map((e) => e.json.id as number);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    onA.close();
    onB.close();
  });

  test("a record larger than a notification may carry reaches the other instance whole", async () => {
    const onB = await on(B, "notes");
    await onB.next((e) => e.event === "connect");
    const body = "ü".repeat(30_000); // 60 kB of UTF-8: far past PostgreSQL's 8,000-byte payload
    const uuid = await post(A, "notes", { title: "large", body });
    const e = await onB.next(created(uuid));
    expect(e.json.record.body).toBe(body);
    await call(A.base, "DELETE", `/api/v1/notes/${uuid}`, { token });
    const gone = await onB.next((x) => x.event === "delete" && x.json.uuid === uuid);
    expect(gone.json.record.uuid).toBe(uuid);
    onB.close();
  });

  test("many writes in one transaction on A come to B as one bulk event", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push(await post(A, "tasks", { title: `t${i}` }));
    const onB = await on(B, "tasks");
    await onB.next((e) => e.event === "connect");
    const r = await call(A.base, "PUT", "/api/v1/tasks", { token, body: Object.fromEntries(ids.map((id) => [id, { title: "all" }])) });
    expect(r.status).toBe(200);
    const bulk = await onB.next((e) => e.event === "bulk");
    expect(bulk.json).toMatchObject({ resource: "tasks", count: 7 });
    expect(onB.events.some((e) => e.event === "update")).toBe(false);
    onB.close();
  });

  test("a command's import (another process) reaches the streams of both instances", async () => {
    const onA = await on(A, "tasks");
    const onB = await on(B, "tasks");
    await onA.next((e) => e.event === "connect");
    await onB.next((e) => e.event === "connect");
    const file = join(dirA, "tasks.json");
    writeFileSync(file, JSON.stringify([{ title: "imported" }]));
    const r = await cli(dirA, ["import", "tasks", file], { env });
    expect(r.code).toBe(0);
    for (const st of [onA, onB]) {
      const e = await st.next((x) => x.event === "create");
      expect(e.json.record.title).toBe("imported");
      st.close();
    }
  });

  test("a role changed on A takes the resource from a stream on B within a second", async () => {
    const role = await call(A.base, "POST", "/api/v1/roles", { token, body: { name: "reader", permissions: ["view-notes", "view-tasks"] } });
    const roleId = Object.keys(role.body!.roles)[0];
    await call(A.base, "POST", "/api/v1/users", { token, body: { email: "reader@example.com", password: "reader-password", role: roleId, api: true } });
    const readerToken = await tokenFor(B.base, "reader@example.com", "reader-password");
    const st = await on(B, "notes,tasks", readerToken);
    await st.next((e) => e.event === "connect");
    await call(A.base, "PUT", `/api/v1/roles/${roleId}`, { token, body: { permissions: ["view-tasks"] } });
    const gone = await st.next((e) => e.event === "unsubscribed", 1500);
    expect(gone.json).toEqual({ subscription: "notes", reason: "ACCESS_DENIED" });
    const hidden = await post(A, "notes", { title: "not for the reader" });
    const task = await post(A, "tasks", { title: "for the reader" });
    await st.next(created(task));
    expect(st.events.some((e) => e.json.uuid === hidden)).toBe(false);
    st.close();
  });

  test("a role downgraded on A: a write on A right after it never reaches the user's stream on B", async () => {
    for (let round = 0; round < 4; round++) {
      const role = await call(A.base, "POST", "/api/v1/roles", { token, body: { name: `x-reader-${round}`, permissions: ["view-notes", "view-tasks"] } });
      const roleId = Object.keys(role.body!.roles)[0];
      const made = await call(A.base, "POST", "/api/v1/users", { token, body: { email: `x${round}@example.com`, password: "reader-password", role: roleId, api: true } });
      const userId = Object.keys(made.body!.users)[0];
      const reader = await tokenFor(B.base, `x${round}@example.com`, "reader-password");
      const st = await openSse(`${B.base}/api/v1/realtime?subscribe=notes,tasks`, { authorization: `Bearer ${reader}` });
      await st.next(ofKind("connect"));
      // The stream on B has used its principal (cached) before the change.
      const before = await post(A, "notes", { title: `before ${round}` });
      await st.next(ofKind("create", before));
      expect((await call(A.base, "PUT", `/api/v1/roles/${roleId}`, { token, body: { permissions: ["view-tasks"] } })).status).toBe(200);
      const after = await post(A, "notes", { title: `after ${round}` });
      const marker = await post(A, "tasks", { title: `marker ${round}` });
      await st.next(ofKind("create", marker), 3000);
      expect(st.events.some((e) => e.json.uuid === after), `round ${round}`).toBe(false);
      // Deleted on A: a write right after it never reaches the stream on B.
      expect((await call(A.base, "DELETE", `/api/v1/users/${userId}`, { token })).status).toBe(200);
      const t = await post(A, "tasks", { title: `after delete ${round}` });
      expect((await st.next(ofKind("close"), 3000)).json.reason).toBe("UNAUTHORIZED");
      expect(st.events.some((e) => e.json.uuid === t), `round ${round}`).toBe(false);
    }
  });

  test("a record too large for a notification that comes to match a filter on B is told (as an update: B cannot know it was outside), never its hidden fields", async () => {
    const st = await openSse(`${B.base}/api/v1/realtime?subscribe=${encodeURIComponent("notes?filter=status:new")}`, { authorization: `Bearer ${token}` });
    await st.next(ofKind("connect"));
    const big = "ü".repeat(10_000);
    const uuid = await post(A, "notes", { title: "big", status: "old", body: big, secret: "hidden-big-secret" });
    expect((await call(A.base, "PUT", `/api/v1/notes/${uuid}`, { token, body: { status: "new" } })).status).toBe(200);
    const e = await st.next((x) => x.json.uuid === uuid && x.event !== "delete");
    // docs/realtime.md, "Several instances": what the record was before is not known on B.
    expect(e.event).toBe("update");
    expect(e.json.record.status).toBe("new");
    expect(e.data).not.toContain("hidden-big-secret");
    st.close();
  });
});

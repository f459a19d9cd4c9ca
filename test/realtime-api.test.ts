/**
 * /api/v1/realtime, black-box: the real server, its Server-Sent Events read as EventSource reads
 * them (test/helpers/sse.ts). Runs on both stores.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { adminSite, cli, onPostgres } from "./helpers/site";
import { call, tokenFor } from "./helpers/access";
import { openSse, type SseStream } from "./helpers/sse";

const notes = {
  fields: { title: { type: "text" }, status: { type: "select", options: { new: "New", old: "Old" } }, secret: { type: "text" }, enc: { type: "text" }, code: { type: "text" }, body: { type: "textarea" } },
  hidden: "secret",
  encrypt: "enc",
  unique: "code",
};
const tasks = { fields: { title: { type: "text" } } };
const news = { fields: { title: { type: "text" } } };

let s: Awaited<ReturnType<typeof adminSite>>;
let adminUuid = "";
/** A stream opened first and read at the end: it must outlive Bun's 30 s idle timeout. */
let longLived: SseStream;
const t0 = Date.now();

const auth = (token = s.token) => ({ authorization: `Bearer ${token}` });
const rt = (query: string) => `${s.base}/api/v1/realtime?${query}`;
const sub = (what: string, token?: string) => openSse(rt(`subscribe=${encodeURIComponent(what)}`), auth(token));
const uuidOf = (r: { body: Record<string, any> | null }, resource = "notes") => Object.keys(r.body![resource])[0];
const ofKind = (kind: string, uuid?: string, subscription?: string) => (e: { event: string; json: Record<string, any> }) =>
  e.event === kind && (uuid === undefined || e.json.uuid === uuid) && (subscription === undefined || (!!e.json.action && (e.json.subscriptions as string[]).includes(subscription)));

/**
 * A raw connection to a stream that reads nothing until asked: the server sees a slow reader
 * (socket buffers fill, then the stream's own).
 */
async function pausedReader(base: string, token: string, subscribe: string, lastEventId?: string) {
  const url = new URL(`${base}/api/v1/realtime?subscribe=${subscribe}`);
  const socket = connect(Number(url.port), url.hostname);
  await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
  socket.pause();
  const resume = lastEventId ? `Last-Event-ID: ${lastEventId}\r\n` : "";
  socket.write(`GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${token}\r\n${resume}Accept: text/event-stream\r\n\r\n`);
  await Bun.sleep(300);
  return {
    /**
     * Reads until `done` holds for what was read (and then, with `quietMs`, until nothing more came
     * for that long), the server ends the stream, or `ms` pass.
     */
    readFor(done: (text: string) => boolean, ms: number, quietMs = 0): Promise<string> {
      let text = "";
      let met = false;
      let quiet: ReturnType<typeof setTimeout> | undefined;
      return new Promise((resolve) => {
        const finish = () => {
          clearTimeout(timer);
          clearTimeout(quiet);
          socket.destroy();
          resolve(text);
        };
        const timer = setTimeout(finish, ms);
        socket.on("data", (d) => {
          text += d.toString("latin1");
          met ||= done(text);
          if (!met) return;
          if (!quietMs) return finish();
          clearTimeout(quiet);
          quiet = setTimeout(finish, quietMs);
        });
        socket.on("close", finish);
        socket.resume();
      });
    },
  };
}

beforeAll(async () => {
  s = await adminSite({
    defs: { notes, tasks, news },
    env: { RESD_REALTIME_BULK: "5", RESD_REALTIME_HEARTBEAT: "1", RESD_REALTIME_MAX_STREAMS_PER_USER: "12" },
    files: { "ext/uri/api/v1/news/index.tpl": "[#api-allow get news#]" },
  });
  const me = await s.apiJson("GET", `/api/v1/users?filter=email:${encodeURIComponent(s.email)}`);
  adminUuid = Object.keys(me.body!.users)[0];
  longLived = await sub("tasks");
  await longLived.next(ofKind("connect"));
});
afterAll(async () => {
  await s.cleanup();
});

describe("events", () => {
  test("create, update, delete and restore, in order, each once, with the record as the API returns it", async () => {
    const st = await sub("notes");
    expect(st.status).toBe(200);
    expect(st.headers.get("content-type")).toStartWith("text/event-stream");
    expect(st.headers.get("cache-control")).toBe("no-store");
    const connected = await st.next(ofKind("connect"));
    expect(connected.json.client_id).toMatch(/^[\w-]{20,}$/);
    expect(connected.json.subscriptions).toEqual(["notes"]);
    const created = await s.apiJson("POST", "/api/v1/notes", { title: "one", secret: "s3cret", enc: "hush", status: "new" });
    const uuid = uuidOf(created);
    await s.apiJson("PUT", `/api/v1/notes/${uuid}`, { title: "two" });
    await s.apiJson("DELETE", `/api/v1/notes/${uuid}`);
    await s.apiJson("POST", `/api/v1/notes/${uuid}/restore`, {});
    const restored = await st.next(ofKind("restore", uuid));
    const mine = st.events.filter((e) => e.json.uuid === uuid);
    expect(mine.map((e) => e.event)).toEqual(["create", "update", "delete", "restore"]);
    const ids = mine.map((e) => e.json.id as number);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(4);
    for (const e of mine) {
      expect(e.id).toBe(`${e.id!.split("-")[0]}-${e.json.id}`);
      expect(e.json.resource).toBe("notes");
      expect(e.json.subscription).toBe("notes");
      expect(e.json._modified_by).toBe(adminUuid);
      expect(typeof e.json._modified).toBe("number");
      // Hidden and encrypted fields never leave the server, in any event.
      expect(e.data).not.toContain("s3cret");
      expect(e.data).not.toContain("hush");
      expect(Object.keys(e.json.record)).not.toContain("secret");
      expect(Object.keys(e.json.record)).not.toContain("enc");
    }
    expect(mine[0].json.record).toMatchObject({ uuid, title: "one", status: "new", _created_by: adminUuid });
    expect(mine[1].json.record.title).toBe("two");
    expect(mine[2].json.record.title).toBe("two"); // a delete carries the record as it was
    expect(restored.json.record.title).toBe("two");
    // The record is what GET answers.
    const got = await s.apiJson("GET", `/api/v1/notes/${uuid}`);
    expect(restored.json.record).toEqual(got.body!.notes[uuid]);
    st.close();
  });

  test("one record's subscription hears that record only", async () => {
    const a = uuidOf(await s.apiJson("POST", "/api/v1/notes", { title: "a" }));
    const b = uuidOf(await s.apiJson("POST", "/api/v1/notes", { title: "b" }));
    const st = await sub(`notes/${a}`);
    await st.next(ofKind("connect"));
    await s.apiJson("PUT", `/api/v1/notes/${b}`, { title: "b2" });
    await s.apiJson("PUT", `/api/v1/notes/${a}`, { title: "a2" });
    const e = await st.next(ofKind("update", a));
    expect(e.json.record.title).toBe("a2");
    expect(st.events.some((x) => x.json.uuid === b)).toBe(false);
    st.close();
  });

  test("a filtered subscription: a record that comes to match is a create for it, one that stops matching a delete", async () => {
    const st = await openSse(rt(`subscribe=${encodeURIComponent("tasks,notes?filter=status:new")}`), auth());
    await st.next(ofKind("connect"));
    const outside = uuidOf(await s.apiJson("POST", "/api/v1/notes", { title: "outside", status: "old" }));
    const inside = uuidOf(await s.apiJson("POST", "/api/v1/notes", { title: "inside", status: "new" }));
    await st.next(ofKind("create", inside));
    await s.apiJson("PUT", `/api/v1/notes/${inside}`, { title: "still inside" });
    await st.next(ofKind("update", inside));
    await s.apiJson("PUT", `/api/v1/notes/${inside}`, { status: "old" });
    const left = await st.next(ofKind("delete", inside));
    expect(left.json.record.status).toBe("old");
    await s.apiJson("PUT", `/api/v1/notes/${outside}`, { status: "new" });
    const entered = await st.next(ofKind("create", outside));
    expect(entered.json.subscription).toBe("notes?filter=status:new");
    // A record outside the filter all along is never told, neither its change nor its delete.
    await s.apiJson("DELETE", `/api/v1/notes/${inside}`);
    const marker = uuidOf(await s.apiJson("POST", "/api/v1/tasks", { title: "marker" }), "tasks");
    await st.next(ofKind("create", marker));
    expect(st.events.filter((e) => e.json.uuid === inside).map((e) => e.event)).toEqual(["create", "update", "delete"]);
    st.close();
  });

  test("subscriptions are checked: unknown resource 404, a filter the list API refuses 400, a hidden field 400, no view 403", async () => {
    expect((await sub("nope")).status).toBe(404);
    const badField = await sub("notes?filter=nofield:1");
    expect(badField.status).toBe(400);
    expect(badField.body!.message).toBe("INVALID_DATA");
    expect((await sub("notes?filter=secret:x")).status).toBe(400);
    expect((await sub("notes?sort=title")).status).toBe(400);
    expect((await sub("notes/bad id")).status).toBe(400);
    const anonymous = await openSse(rt("subscribe=notes"));
    expect(anonymous.status).toBe(403);
    expect(anonymous.body!.needs).toContain("view-notes");
    expect((await openSse(rt("subscribe=notes"), { authorization: "Bearer nonsense" })).status).toBe(401);
    expect((await call(s.base, "POST", "/api/v1/realtime", { token: s.token })).status).toBe(405);
  });

  test("anonymous visitors subscribe where view is allowed anonymously", async () => {
    const st = await openSse(rt("subscribe=news"));
    expect(st.status).toBe(200);
    await st.next(ofKind("connect"));
    const n = uuidOf(await s.apiJson("POST", "/api/v1/news", { title: "Hello" }), "news");
    expect((await st.next(ofKind("create", n))).json.record.title).toBe("Hello");
    st.close();
  });

  test("POST /api/v1/realtime/{client_id} replaces the subscriptions; only for the stream's own caller", async () => {
    const st = await sub("tasks");
    const { json } = await st.next(ofKind("connect"));
    const changed = await call(s.base, "POST", `/api/v1/realtime/${json.client_id}`, { token: s.token, body: { subscribe: ["notes"] } });
    expect(changed.status).toBe(200);
    expect(changed.body!.subscriptions).toEqual(["notes"]);
    const n = uuidOf(await s.apiJson("POST", "/api/v1/notes", { title: "after" }));
    const t = uuidOf(await s.apiJson("POST", "/api/v1/tasks", { title: "not any more" }), "tasks");
    await st.next(ofKind("create", n));
    expect(st.events.some((e) => e.json.uuid === t)).toBe(false);
    expect((await call(s.base, "POST", `/api/v1/realtime/${json.client_id}`, { body: { subscribe: ["news"] } })).status).toBe(403);
    expect((await call(s.base, "POST", "/api/v1/realtime/nosuchclient", { token: s.token, body: { subscribe: ["notes"] } })).status).toBe(404);
    expect((await call(s.base, "POST", `/api/v1/realtime/${json.client_id}`, { token: s.token, body: { subscribe: 5 } })).status).toBe(400);
    // All or nothing: one refused subscription keeps the ones in force.
    expect((await call(s.base, "POST", `/api/v1/realtime/${json.client_id}`, { token: s.token, body: { subscribe: ["tasks", "nope"] } })).status).toBe(404);
    const n2 = uuidOf(await s.apiJson("POST", "/api/v1/notes", { title: "still notes" }));
    await st.next(ofKind("create", n2));
    st.close();
  });
});

describe("the OpenAPI document", () => {
  test("lists the stream and the resubscribe, with the resources the caller may subscribe to", async () => {
    const admin = await s.apiJson("GET", "/api/v1/openapi.json");
    const open = admin.body!.paths["/api/v1/realtime"].get;
    expect(Object.keys(open.responses)).toEqual(expect.arrayContaining(["200", "400", "401", "403", "404", "429"]));
    expect(open.responses["200"].content["text/event-stream"]).toBeDefined();
    expect(open.parameters.map((x: { name: string }) => x.name)).toEqual(["subscribe", "Last-Event-ID", "last_event_id"]);
    expect(admin.body!.paths["/api/v1/realtime/{client_id}"].post).toBeDefined();
    const items = open.parameters[0].schema.items.description as string;
    for (const name of ["news", "notes", "tasks"]) expect(items).toContain(name);
  });
});

describe("writes of many records", () => {
  test("a rolled back bulk write sends nothing", async () => {
    const a = uuidOf(await s.apiJson("POST", "/api/v1/notes", { title: "ra", code: "ra" }));
    const b = uuidOf(await s.apiJson("POST", "/api/v1/notes", { title: "rb", code: "rb" }));
    const st = await sub("notes");
    await st.next(ofKind("connect"));
    // Both take the same unique code: the second write fails inside the transaction, which rolls back.
    const r = await s.apiJson("PUT", "/api/v1/notes", { [a]: { title: "changed", code: "same" }, [b]: { title: "changed", code: "same" } });
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect((await s.apiJson("GET", `/api/v1/notes/${a}`)).body!.notes[a].title).toBe("ra");
    const marker = uuidOf(await s.apiJson("POST", "/api/v1/notes", { title: "marker" }));
    await st.next(ofKind("create", marker));
    expect(st.events.filter((e) => e.json.uuid === a || e.json.uuid === b)).toEqual([]);
    st.close();
  });

  test("a bulk PUT within RESD_REALTIME_BULK is told record by record; above it, and a delete of all, as one bulk event", async () => {
    const st = await sub("tasks");
    await st.next(ofKind("connect"));
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.push(uuidOf(await s.apiJson("POST", "/api/v1/tasks", { title: `t${i}` }), "tasks"));
    await st.next(ofKind("create", ids[7]));
    const few = Object.fromEntries(ids.slice(0, 3).map((id) => [id, { title: "few" }]));
    await s.apiJson("PUT", "/api/v1/tasks", few);
    for (const id of ids.slice(0, 3)) await st.next(ofKind("update", id));
    const many = Object.fromEntries(ids.map((id) => [id, { title: "many" }]));
    const before = st.events.length;
    await s.apiJson("PUT", "/api/v1/tasks", many);
    const bulk = await st.next((e) => e.event === "bulk" && e.json.count === 8);
    expect(bulk.json).toMatchObject({ action: "bulk", resource: "tasks", subscription: "tasks" });
    expect(st.events.slice(before).filter((e) => e.event === "update")).toEqual([]);
    const del = await s.apiJson("DELETE", "/api/v1/tasks");
    expect(del.status).toBe(200);
    const all = await st.next((e) => e.event === "bulk" && e.json.id > bulk.json.id);
    expect(all.json.count).toBe(del.body!.count);
    st.close();
  });

  test("an import over HTTP is one transaction: its records come as one bulk event, or one by one within the bound", async () => {
    const st = await sub("tasks");
    await st.next(ofKind("connect"));
    const upload = async (rows: unknown[]) => {
      const form = new FormData();
      form.append("file", new Blob([JSON.stringify(rows)]), "rows.json");
      const res = await fetch(`${s.base}/api/v1/tasks/import`, { method: "POST", headers: auth(), body: form });
      expect(res.status).toBe(200);
    };
    await upload(Array.from({ length: 12 }, (_, i) => ({ title: `imported ${i}` })));
    const bulk = await st.next(ofKind("bulk"));
    expect(bulk.json.count).toBe(12);
    await upload([{ title: "one" }, { title: "two" }]);
    await st.next((e) => e.event === "create" && e.json.record.title === "two");
    expect(st.events.filter((e) => e.event === "create").map((e) => e.json.record.title)).toEqual(["one", "two"]);
    st.close();
  });

  test("an import by the command line, in another process, is announced", async () => {
    const st = await sub("notes");
    await st.next(ofKind("connect"));
    const file = `${s.dir}/import.json`;
    await Bun.write(file, JSON.stringify([{ title: "imported 1" }, { title: "imported 2" }]));
    const r = await cli(s.dir, ["import", "notes", file]);
    expect(r.code).toBe(0);
    if (onPostgres) {
      // Every process on PostgreSQL tells its changes to the others: the import's records come one by one.
      const titles = new Set<string>();
      await st.next((e) => (e.event === "create" && titles.add(e.json.record.title), titles.size === 2));
      expect([...titles].sort()).toEqual(["imported 1", "imported 2"]);
    } else {
      // On SQLite another process's commit is seen, not its records: one bulk event says to reload.
      const e = await st.next(ofKind("bulk"), 5000);
      expect(e.json).toMatchObject({ resource: "notes", count: null });
    }
    st.close();
  });
});

describe("permissions while connected", () => {
  test("a user who loses view-notes stops hearing notes within a second; a deleted user's stream ends", async () => {
    const role = await s.apiJson("POST", "/api/v1/roles", { name: "watcher", permissions: ["view-notes", "view-tasks"] });
    const roleId = uuidOf(role, "roles");
    const user = await s.apiJson("POST", "/api/v1/users", { email: "watcher@example.com", password: "watcher-password", role: roleId, api: true });
    const userId = uuidOf(user, "users");
    const token = await tokenFor(s.base, "watcher@example.com", "watcher-password");
    const st = await openSse(rt("subscribe=notes,tasks"), auth(token));
    await st.next(ofKind("connect"));
    const seen = uuidOf(await s.apiJson("POST", "/api/v1/notes", { title: "seen" }));
    await st.next(ofKind("create", seen));
    await s.apiJson("PUT", `/api/v1/roles/${roleId}`, { permissions: ["view-tasks"] });
    const gone = await st.next(ofKind("unsubscribed"), 1500);
    expect(gone.json).toEqual({ subscription: "notes", reason: "ACCESS_DENIED" });
    const unseen = uuidOf(await s.apiJson("POST", "/api/v1/notes", { title: "unseen" }));
    const task = uuidOf(await s.apiJson("POST", "/api/v1/tasks", { title: "task" }), "tasks");
    await st.next(ofKind("create", task));
    expect(st.events.some((e) => e.json.uuid === unseen)).toBe(false);
    // The user is deleted: the stream is closed, with a last event saying why.
    await s.apiJson("DELETE", `/api/v1/users/${userId}`);
    const closed = await st.next(ofKind("close"), 2500);
    expect(closed.json.reason).toBe("UNAUTHORIZED");
    await st.ended;
  });

  test("signing out ends a session's stream", async () => {
    const login = await fetch(`${s.base}/api/v1/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: s.email, password: "admin-password" }) });
    expect(login.status).toBe(200);
    const cookie = login.headers.get("set-cookie")!.split(";")[0];
    const st = await openSse(rt("subscribe=notes"), { cookie });
    await st.next(ofKind("connect"));
    const out = await fetch(`${s.base}/api/v1/session`, { method: "DELETE", headers: { cookie, origin: s.base } });
    expect(out.status).toBeLessThan(300);
    const closed = await st.next(ofKind("close"), 2500);
    expect(closed.json.reason).toBe("UNAUTHORIZED");
    await st.ended;
  });
});

describe("resuming", () => {
  test("Last-Event-ID resumes with exactly what was missed; an id of another server gets reset", async () => {
    const st = await sub("notes");
    await st.next(ofKind("connect"));
    const first = uuidOf(await s.apiJson("POST", "/api/v1/notes", { title: "before the break" }));
    const last = await st.next(ofKind("create", first));
    st.close();
    const missed: string[] = [];
    for (let i = 0; i < 3; i++) missed.push(uuidOf(await s.apiJson("POST", "/api/v1/notes", { title: `missed ${i}` })));
    const again = await openSse(rt("subscribe=notes"), { ...auth(), "last-event-id": last.id! });
    await again.next(ofKind("create", missed[2]));
    const told = again.events.filter((e) => e.event === "create").map((e) => e.json.uuid);
    expect(told).toEqual(missed);
    expect(again.events.some((e) => e.event === "reset")).toBe(false);
    again.close();
    // The query parameter does the same for a client that cannot set headers on its first request.
    const byQuery = await openSse(rt(`subscribe=notes&last_event_id=${encodeURIComponent(last.id!)}`), auth());
    await byQuery.next(ofKind("create", missed[2]));
    byQuery.close();
    for (const bad of ["zzzzzzzz-1", `${last.id!.split("-")[0]}-999999999`, "garbage"]) {
      const reset = await openSse(rt("subscribe=notes"), { ...auth(), "last-event-id": bad });
      const e = await reset.next(ofKind("reset"));
      expect(typeof e.json.reason).toBe("string");
      reset.close();
    }
  });
});

describe("bounds", () => {
  test("more streams than a user may hold get 429; closing one makes room", async () => {
    // A user of its own: the server frees a closed stream's place a moment after the close, and the
    // admin's next stream (the next test's) must not meet this test's last ones still counted.
    const role = await s.apiJson("POST", "/api/v1/roles", { name: "streamer", permissions: ["view-tasks"] });
    await s.apiJson("POST", "/api/v1/users", { email: "streamer@example.com", password: "streamer-password", role: uuidOf(role, "roles"), api: true });
    const token = await tokenFor(s.base, "streamer@example.com", "streamer-password");
    const open: SseStream[] = [];
    try {
      for (let i = 0; i < 12; i++) {
        const st = await sub("tasks", token);
        expect(st.status).toBe(200);
        await st.next(ofKind("connect"));
        open.push(st);
      }
      const refused = await sub("tasks", token);
      expect(refused.status).toBe(429);
      expect(refused.body!.message).toBe("TOO_MANY_REQUESTS");
      // Another user's streams are counted apart: the admin may still open one.
      const admins = await sub("tasks");
      expect(admins.status).toBe(200);
      admins.close();
      open.pop()!.close();
      const deadline = Date.now() + 3000;
      let again = await sub("tasks", token);
      while (again.status === 429 && Date.now() < deadline) {
        await Bun.sleep(50);
        again = await sub("tasks", token);
      }
      expect(again.status).toBe(200);
      open.push(again);
    } finally {
      for (const st of open) st.close();
    }
  });

  test("a reader that falls behind its buffer is told the rest as it reads: nothing lost, in order", async () => {
    const reader = await pausedReader(s.base, s.token, "notes");
    const big = "x".repeat(60_000);
    const titles: string[] = [];
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < 200; i++) {
      titles.push(`big ${i}`);
      writes.push(s.apiJson("POST", "/api/v1/notes", { title: `big ${i}`, body: big }));
      if (writes.length >= 8) await Promise.all(writes.splice(0));
    }
    await Promise.all(writes);
    // Writes made at the same time commit in any order: the last one written need not be told last.
    const text = await reader.readFor((t) => t.includes('"title":"big 199"'), 20_000, 1000);
    // Each once, in the order of their ids (writes made at the same time commit in any order).
    const told = [...text.matchAll(/"title":"(big \d+)"/g)].map((m) => m[1]);
    expect([...told].sort()).toEqual([...titles].sort());
    const ids = [...text.matchAll(/^data: \{"id":(\d+)/gm)].map((m) => Number(m[1]));
    expect(ids.length).toBe(200);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(text).not.toContain("event: close");
  }, 60_000);

  test("heartbeat comments keep an idle stream open, past the server's idle timeout", async () => {
    const waited = Date.now() - t0;
    if (waited < 33_000) await Bun.sleep(33_000 - waited);
    expect(longLived.comments).toBeGreaterThan(20);
    const t = uuidOf(await s.apiJson("POST", "/api/v1/tasks", { title: "still here" }), "tasks");
    await longLived.next(ofKind("create", t));
    longLived.close();
  }, 60_000);
});

describe("servers with other settings", () => {
  test("a bearer token's stream ends when the token expires", async () => {
    // What these check is the hub's, the same on either store: SQLite keeps the PostgreSQL run short.
    const short = await adminSite({ defs: { notes }, store: "sqlite", env: { RESD_TOKEN_TTL: "2" } });
    try {
      const token = await tokenFor(short.base, short.email, "admin-password");
      const st = await openSse(`${short.base}/api/v1/realtime?subscribe=notes`, { authorization: `Bearer ${token}` });
      await st.next(ofKind("connect"));
      const closed = await st.next(ofKind("close"), 5000);
      expect(closed.json.reason).toBe("UNAUTHORIZED");
      await st.ended;
    } finally {
      await short.cleanup();
    }
  }, 30_000);

  test("an id older than the window gets reset; a reader behind by more than the window is dropped with a last event", async () => {
    const tiny = await adminSite({ defs: { notes }, store: "sqlite", env: { RESD_REALTIME_WINDOW: "3", RESD_REALTIME_BUFFER: "65536" } });
    try {
      const h = { authorization: `Bearer ${tiny.token}` };
      const w = await openSse(`${tiny.base}/api/v1/realtime?subscribe=notes`, h);
      await w.next(ofKind("connect"));
      const first = Object.keys((await tiny.apiJson("POST", "/api/v1/notes", { title: "0" })).body!.notes)[0];
      const seen = await w.next(ofKind("create", first));
      w.close();
      for (let i = 1; i <= 5; i++) await tiny.apiJson("POST", "/api/v1/notes", { title: String(i) });
      const late = await openSse(`${tiny.base}/api/v1/realtime?subscribe=notes`, { ...h, "last-event-id": seen.id! });
      const reset = await late.next(ofKind("reset"));
      expect(reset.json.reason).toContain("no longer kept");
      expect(late.events.some((e) => e.event === "create")).toBe(false);
      late.close();

      // Rather than buffered without bound, a reader behind by more than the window is dropped.
      const slow = await pausedReader(tiny.base, tiny.token, "notes");
      const big = "y".repeat(100_000);
      for (let i = 0; i < 160; i++) await tiny.apiJson("POST", "/api/v1/notes", { title: `slow ${i}`, body: big });
      const text = await slow.readFor((t) => t.includes('"reason":"SLOW_READER"'), 10_000);
      expect(text).toContain("event: close");
      expect(text).toMatch(/"reason":"SLOW_READER"/);
      // What reached the socket's buffers before the stream's own filled, not all 160 events.
      expect(text.length).toBeLessThan(80 * 100_000);
      // Its last id resumes into a reset: what it missed is no longer kept.
      const lastId = [...text.matchAll(/^id: (\S+)$/gm)].at(-1)![1];
      const back = await openSse(`${tiny.base}/api/v1/realtime?subscribe=notes`, { ...h, "last-event-id": lastId });
      await back.next(ofKind("reset"));
      back.close();
    } finally {
      await tiny.cleanup();
    }
  }, 60_000);
});

/**
 * Hostile tests of /api/v1/realtime (docs/realtime.md): leaks, authentication, malformed input,
 * resource exhaustion, races and filter correctness. Black-box, against the real server.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect, type Socket } from "node:net";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { adminSite } from "./helpers/site";
import { call, tokenFor } from "./helpers/access";
import { openSse, type SseEvent, type SseStream } from "./helpers/sse";

const notes = {
  fields: {
    title: { type: "text" },
    status: { type: "select", options: { new: "New", old: "Old", "": "None" } },
    secret: { type: "text" },
    enc: { type: "text" },
    body: { type: "textarea" },
  },
  hidden: "secret",
  encrypt: "enc",
};
const tasks = { fields: { title: { type: "text" } } };
/** Every field type a filter treats in its own way. */
const things = {
  languages: ["en", "de"],
  fields: {
    title: { type: "text" },
    status: { type: "select", options: { new: "New", old: "Old" } },
    tags: { type: "select", multi: true, options: { a: "A", b: "B", c: "C" } },
    n: { type: "number" },
    done: { type: "boolean" },
    label: { type: "text", i18n: true },
    day: { type: "date" },
    secret: { type: "text" },
  },
  hidden: "secret",
};

type Site = Awaited<ReturnType<typeof adminSite>>;
let s: Site;
let adminUuid = "";
let longLived: SseStream[] = [];
let longLivedSince = 0;

const auth = (token = s.token) => ({ authorization: `Bearer ${token}` });
const rt = (query: string, base = s.base) => `${base}/api/v1/realtime?${query}`;
const sub = (what: string, token?: string) => openSse(rt(`subscribe=${encodeURIComponent(what)}`), auth(token));
const uuidOf = (r: { body: Record<string, any> | null }, resource = "notes") => Object.keys(r.body![resource])[0];
const ofKind = (kind: string, uuid?: string, subscription?: string) => (e: SseEvent) =>
  e.event === kind && (uuid === undefined || e.json.uuid === uuid) && (subscription === undefined || (!!e.json.action && (e.json.subscriptions as string[]).includes(subscription)));
const rss = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) * 1024;

/** A role and a user with API access holding it; its token. */
async function userWith(name: string, permissions: string[]) {
  const role = await s.apiJson("POST", "/api/v1/roles", { name: `${name}-role`, permissions });
  expect(role.status).toBe(201);
  const roleId = uuidOf(role, "roles");
  const email = `${name}@example.com`;
  const user = await s.apiJson("POST", "/api/v1/users", { email, password: `${name}-password`, role: roleId, api: true });
  expect(user.status).toBe(201);
  const token = await tokenFor(s.base, email, `${name}-password`);
  return { roleId, uuid: uuidOf(user, "users"), email, password: `${name}-password`, token };
}

/** A raw HTTP connection asking for a stream, paused: it reads nothing (a slow reader, or one that goes away). */
async function rawStream(base: string, headers: string, path: string): Promise<{ socket: Socket }> {
  const url = new URL(base);
  const socket = connect(Number(url.port), url.hostname);
  await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
  socket.pause();
  socket.write(`GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\n${headers}Accept: text/event-stream\r\n\r\n`);
  return { socket };
}

/** Opens a stream, retrying while the server still counts streams that went away (429). */
async function openWithin(ms: number, open: () => Promise<SseStream>): Promise<SseStream> {
  const deadline = Date.now() + ms;
  let st = await open();
  while (st.status === 429 && Date.now() < deadline) {
    await Bun.sleep(100);
    st = await open();
  }
  return st;
}

beforeAll(async () => {
  s = await adminSite({
    defs: { notes, tasks, things },
    env: { RESD_REALTIME_BULK: "5", RESD_REALTIME_MAX_STREAMS_PER_USER: "6" },
  });
  const me = await s.apiJson("GET", `/api/v1/users?filter=email:${encodeURIComponent(s.email)}`);
  adminUuid = Object.keys(me.body!.users)[0];
  // Streams read at the end of the file, past Bun's 30 s idle timeout: one at the documented path,
  // one at the same path with a trailing slash (which the router serves as a stream too).
  const keeper = await userWith("keeper", ["view-tasks"]);
  longLived = [await openSse(`${s.base}/api/v1/realtime?subscribe=tasks`, auth(keeper.token)), await openSse(`${s.base}/api/v1/realtime/?subscribe=tasks`, auth(keeper.token))];
  for (const st of longLived) await st.next(ofKind("connect"));
  longLivedSince = Date.now();
});
afterAll(async () => {
  await s?.cleanup();
});

describe("information leaks", () => {
  test("users: no password hash, salt, api flag or token epoch in any event, also on a password change", async () => {
    const st = await sub("users");
    await st.next(ofKind("connect"));
    const made = await s.apiJson("POST", "/api/v1/users", { email: "leaky@example.com", password: "first-password-1", api: true });
    expect(made.status).toBe(201);
    const uuid = uuidOf(made, "users");
    await s.apiJson("PUT", `/api/v1/users/${uuid}`, { password: "second-password-2", name: "Leaky" });
    await s.apiJson("DELETE", `/api/v1/users/${uuid}`);
    await st.next(ofKind("delete", uuid));
    const mine = st.events.filter((e) => e.json.uuid === uuid);
    expect(mine.map((e) => e.event)).toEqual(["create", "update", "delete"]);
    for (const e of mine) {
      for (const key of ["password", "salt", "api", "password_reset_token", "change_email_token", "token_epoch"]) expect(Object.keys(e.json.record)).not.toContain(key);
      expect(e.data).not.toContain("$argon2");
      expect(e.data).not.toContain("password-");
    }
    // Filters on what users keep to themselves are refused.
    for (const f of ["password:x", "api:1", "token_epoch:x", "salt:x"]) expect((await sub(`users?filter=${f}`)).status).toBe(400);
    st.close();
  });

  test("hidden and encrypted fields: never sent, not filterable (in any spelling), and not revealed by a filter's transitions", async () => {
    for (const f of ["secret:x", "enc:x", " secret:x", "secret :x", "secret:!x", "secret:", "title:a,secret:x", "enc:x||y"]) {
      const r = await sub(`notes?filter=${f}`);
      expect(r.status, f).toBe(400);
    }
    // Through the query's own encoding too.
    expect((await openSse(rt(`subscribe=${encodeURIComponent("notes?filter=%73ecret%3Ax")}`), auth())).status).toBe(400);
    expect((await openSse(rt(`subscribe=${encodeURIComponent("notes?fil%74er=secret:x")}`), auth())).status).toBe(400);
    const st = await openSse(rt(`subscribe=notes&subscribe=${encodeURIComponent("notes?filter=title:leak")}`), auth());
    await st.next(ofKind("connect"));
    const a = uuidOf(await s.apiJson("POST", "/api/v1/notes", { title: "leak", secret: "top-secret-1", enc: "enc-secret-1" }));
    await s.apiJson("PUT", `/api/v1/notes/${a}`, { secret: "top-secret-2", enc: "enc-secret-2" });
    await s.apiJson("PUT", `/api/v1/notes/${a}`, { title: "other" });
    await s.apiJson("DELETE", `/api/v1/notes/${a}`);
    await s.apiJson("POST", `/api/v1/notes/${a}/restore`, {});
    await st.next(ofKind("restore", a, "notes"));
    for (const e of st.events) {
      expect(e.data).not.toContain("top-secret");
      expect(e.data).not.toContain("enc-secret");
    }
    // A change of the hidden field alone moves nothing in or out of the filtered set.
    const filtered = st.events.filter((e) => e.json.uuid === a && (e.json.subscriptions as string[]).includes("notes?filter=title:leak")).map((e) => e.event);
    expect(filtered).toEqual(["create", "update", "delete"]);
    st.close();
  });

  test("record-level permission (api_get_notes_<uuid>): that record only; never the resource, another record, or a bulk count of the rest", async () => {
    const mine = uuidOf(await s.apiJson("POST", "/api/v1/notes", { title: "mine" }));
    const other = uuidOf(await s.apiJson("POST", "/api/v1/notes", { title: "other" }));
    const u = await userWith("recordonly", [`api_get_notes_${mine}`]);
    // GET answers the same way.
    expect((await call(s.base, "GET", `/api/v1/notes/${mine}`, { token: u.token })).status).toBe(200);
    expect((await call(s.base, "GET", `/api/v1/notes/${other}`, { token: u.token })).status).toBe(403);
    for (const what of ["notes", `notes/${other}`, "notes?filter=title:other", `notes?filter=uuid:${other}`, `notes/${mine}/../${other}`, `notes/${mine}/`, `notes/${other}?filter=title:other`]) {
      const r = await sub(what, u.token);
      expect(r.status, what).toBeGreaterThanOrEqual(400);
      r.close();
    }
    const st = await sub(`notes/${mine}`, u.token);
    expect(st.status).toBe(200);
    await st.next(ofKind("connect"));
    await s.apiJson("PUT", `/api/v1/notes/${other}`, { title: "other changed" });
    await s.apiJson("PUT", `/api/v1/notes/${mine}`, { title: "mine changed" });
    await st.next(ofKind("update", mine));
    expect(st.events.some((e) => e.json.uuid === other)).toBe(false);
    // A bulk PUT of records the user may not see (more than RESD_REALTIME_BULK=5): the count of
    // other people's records is nothing this user may learn.
    const others: string[] = [];
    for (let i = 0; i < 7; i++) others.push(uuidOf(await s.apiJson("POST", "/api/v1/notes", { title: `hidden ${i}` })));
    const r = await s.apiJson("PUT", "/api/v1/notes", Object.fromEntries(others.map((id) => [id, { title: "bulk" }])));
    expect(r.status).toBe(200);
    await s.apiJson("PUT", `/api/v1/notes/${mine}`, { title: "marker" });
    await st.next((e) => e.event === "update" && e.json.record.title === "marker");
    for (const e of st.events.filter((x) => x.event === "bulk")) expect(e.json.count).toBeNull();
    st.close();
  });

  test("a user with view-tasks only hears nothing of notes, not even a bulk", async () => {
    const u = await userWith("tasksonly", ["view-tasks"]);
    expect((await sub("notes", u.token)).status).toBe(403);
    const st = await sub("tasks", u.token);
    await st.next(ofKind("connect"));
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push(uuidOf(await s.apiJson("POST", "/api/v1/notes", { title: `n${i}` })));
    await s.apiJson("PUT", "/api/v1/notes", Object.fromEntries(ids.map((id) => [id, { title: "many" }])));
    const t = uuidOf(await s.apiJson("POST", "/api/v1/tasks", { title: "marker" }), "tasks");
    await st.next(ofKind("create", t));
    expect(st.events.filter((e) => e.json.resource === "notes")).toEqual([]);
    // Resubscribing does not open it either.
    const id = st.events[0].json.client_id;
    expect((await call(s.base, "POST", `/api/v1/realtime/${id}`, { token: u.token, body: { subscribe: ["notes"] } })).status).toBe(403);
    st.close();
  });
});

describe("authentication", () => {
  test("POST /api/v1/realtime/{client_id}: another user, an anonymous caller, a guessed id, a cookie from another origin are refused", async () => {
    const a = await userWith("alice", ["view-notes", "view-tasks"]);
    const b = await userWith("bob", ["view-notes", "view-tasks"]);
    const st = await sub("tasks", a.token);
    const { json } = await st.next(ofKind("connect"));
    const id = json.client_id as string;
    const post = (opts: Parameters<typeof call>[3], clientId = id) => call(s.base, "POST", `/api/v1/realtime/${encodeURIComponent(clientId)}`, opts);
    expect((await post({ token: b.token, body: { subscribe: ["notes"] } })).status).toBe(403);
    expect((await post({ body: { subscribe: [] } })).status).toBe(403);
    expect((await post({ token: s.token, body: { subscribe: ["notes"] } })).status).toBe(403);
    expect((await post({ token: "garbage", body: { subscribe: ["notes"] } })).status).toBe(401);
    for (const guess of [id.slice(0, -1), `${id}x`, id.toUpperCase() === id ? id.toLowerCase() : id.toUpperCase(), "..", "%2e%2e", "constructor", "__proto__", "x".repeat(5000)]) {
      const r = await post({ token: a.token, body: { subscribe: ["notes"] } }, guess);
      expect([404, 400, 414, 431], guess).toContain(r.status);
    }
    // The owner's session cookie, sent by a page of another origin: refused like any cross-origin write.
    const login = await fetch(`${s.base}/api/v1/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: a.email, password: a.password }) });
    const cookie = login.headers.get("set-cookie")!.split(";")[0];
    expect((await post({ headers: { cookie, origin: "http://evil.example" }, body: { subscribe: ["notes"] } })).status).toBe(403);
    // None of it changed anything: the stream still hears tasks and not notes.
    const n = uuidOf(await s.apiJson("POST", "/api/v1/notes", { title: "not for alice" }));
    const t = uuidOf(await s.apiJson("POST", "/api/v1/tasks", { title: "for alice" }), "tasks");
    await st.next(ofKind("create", t));
    expect(st.events.some((e) => e.json.uuid === n)).toBe(false);
    // The owner through its own session (same origin) may.
    expect((await post({ headers: { cookie, origin: s.base }, body: { subscribe: ["notes"] } })).status).toBe(200);
    st.close();
    // A stream that is gone: 404.
    await Bun.sleep(300);
    expect((await post({ token: a.token, body: { subscribe: ["notes"] } })).status).toBe(404);
  });

  test("a session cookie sent by a page of another origin opens no stream as that user", async () => {
    const login = await fetch(`${s.base}/api/v1/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: s.email, password: "admin-password" }) });
    const cookie = login.headers.get("set-cookie")!.split(";")[0];
    const same = await openSse(rt("subscribe=notes"), { cookie, origin: s.base });
    expect(same.status).toBe(200);
    same.close();
    // EventSource withCredentials from another site (or a same-site subdomain): the doc says cookies
    // never travel cross-origin, so the stream must not run with the cookie's user (notes needs view-notes).
    const foreign = await openSse(rt("subscribe=notes"), { cookie, origin: "http://evil.example", "sec-fetch-site": "cross-site" });
    const opened = foreign.status === 200;
    foreign.close();
    expect(opened).toBe(false);
  });

  test("a changed password ends the user's token and session streams", async () => {
    const u = await userWith("changer", ["view-notes"]);
    const login = await fetch(`${s.base}/api/v1/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: u.email, password: u.password }) });
    const cookie = login.headers.get("set-cookie")!.split(";")[0];
    const byToken = await sub("notes", u.token);
    const bySession = await openSse(rt("subscribe=notes"), { cookie });
    await byToken.next(ofKind("connect"));
    await bySession.next(ofKind("connect"));
    const changed = await s.apiJson("PUT", `/api/v1/users/${u.uuid}`, { password: "a-brand-new-password" });
    expect(changed.status).toBe(200);
    const leak = uuidOf(await s.apiJson("POST", "/api/v1/notes", { title: "after the password change" }));
    expect((await byToken.next(ofKind("close"), 3000)).json.reason).toBe("UNAUTHORIZED");
    expect((await bySession.next(ofKind("close"), 3000)).json.reason).toBe("UNAUTHORIZED");
    // Nothing written after the change reached the old credentials.
    expect(byToken.events.some((e) => e.json.uuid === leak)).toBe(false);
    expect(bySession.events.some((e) => e.json.uuid === leak)).toBe(false);
    await byToken.ended;
    await bySession.ended;
  });

  test("a role downgrade or a deleted user: a write committed right after it never reaches the stream", async () => {
    for (let round = 0; round < 5; round++) {
      const u = await userWith(`racer${round}`, ["view-notes", "view-tasks"]);
      const st = await openSse(rt("subscribe=notes,tasks"), auth(u.token));
      await st.next(ofKind("connect"));
      // Writes race the permission change: fire them together, then one surely after.
      const roleChange = s.apiJson("PUT", `/api/v1/roles/${u.roleId}`, { permissions: ["view-tasks"] });
      const racing = [1, 2, 3].map((i) => s.apiJson("POST", "/api/v1/notes", { title: `race ${round} ${i}` }));
      const changed = await roleChange;
      expect(changed.status).toBe(200);
      const after = uuidOf(await s.apiJson("POST", "/api/v1/notes", { title: `after ${round}` }));
      await Promise.all(racing);
      const unsub = await st.next(ofKind("unsubscribed"), 2000);
      expect(unsub.json).toEqual({ subscription: "notes", reason: "ACCESS_DENIED" });
      // Nothing of notes after the unsubscribed event, and never the write made after the change.
      const at = st.events.indexOf(unsub);
      expect(st.events.slice(at).filter((e) => e.json.resource === "notes")).toEqual([]);
      expect(st.events.some((e) => e.json.uuid === after)).toBe(false);
      // Deleted: the next write of tasks never reaches it.
      await s.apiJson("DELETE", `/api/v1/users/${u.uuid}`);
      const t = uuidOf(await s.apiJson("POST", "/api/v1/tasks", { title: `after delete ${round}` }), "tasks");
      expect((await st.next(ofKind("close"), 2000)).json.reason).toBe("UNAUTHORIZED");
      await st.ended;
      expect(st.events.some((e) => e.json.uuid === t)).toBe(false);
    }
  });
});

describe("malformed input", () => {
  /** Opens a stream with a raw query; answers the status and, for a stream, its connect event's subscriptions. */
  async function tryQuery(query: string, headers: Record<string, string> = auth()) {
    const st = await openSse(rt(query), headers);
    if (st.status !== 200) return { status: st.status, body: st.body, subs: null as string[] | null, st };
    const c = await st.next(ofKind("connect"));
    st.close();
    return { status: 200, body: null, subs: c.json.subscriptions as string[], st };
  }

  test("odd subscribe parameters: a clear 4xx or a sensible stream, never a 500", async () => {
    expect((await tryQuery("")).subs).toEqual([]);
    expect((await tryQuery("subscribe=")).subs).toEqual([]);
    expect((await tryQuery("subscribe=,,,")).subs).toEqual([]);
    expect((await tryQuery(`subscribe=${",".repeat(10_000)}`)).subs).toEqual([]);
    expect((await tryQuery(`subscribe=${"notes,".repeat(2000)}`)).subs).toEqual(["notes"]);
    expect((await tryQuery("subscribe=notes&subscribe=notes&subscribe=%20notes%20")).subs).toEqual(["notes"]);
    const cases: [string, number[]][] = [
      ["notes%00", [400, 404]],
      ["notes%2F..%2Fusers", [400]],
      ["notes/../users", [400]],
      ["notes%2F", [400]],
      ["notes%2F%2F", [400]],
      [encodeURIComponent("/notes"), [400]],
      [encodeURIComponent("nötes"), [404]],
      [encodeURIComponent("notes/ä"), [400]],
      [encodeURIComponent("notes/x\u0000y"), [400]],
      [encodeURIComponent("notes?filter=title:a\u0000b"), [400]],
      [encodeURIComponent("notes?filter=title"), [400]],
      [encodeURIComponent("notes?filter=:x"), [400]],
      [encodeURIComponent("notes?filter=nope:x"), [400]],
      [encodeURIComponent("notes?limit=1"), [400]],
      [encodeURIComponent("notes?filter=title:a&search=x"), [400]],
      [encodeURIComponent("notes?filter=title:a&filter=title:b"), [400, 200]],
      [encodeURIComponent(`notes?filter=${Array.from({ length: 40 }, (_, i) => `title:${i}`).join(",")}`), [400]],
      [encodeURIComponent(`notes?filter=title:${Array.from({ length: 150 }, (_, i) => i).join("||")}`), [400]],
      [encodeURIComponent("notes?filter=status:%ZZ"), [400, 200]],
      [encodeURIComponent("__proto__"), [404]],
      [encodeURIComponent("constructor"), [404]],
      [encodeURIComponent("users/"), [400]],
      [encodeURIComponent("realtime"), [404]],
      [encodeURIComponent("notes?"), [200, 400]],
      [encodeURIComponent("?filter=title:x"), [400]],
      [encodeURIComponent(`notes/${"a".repeat(129)}`), [400]],
      [encodeURIComponent(`notes?filter=title:${"x".repeat(2100)}`), [400]],
    ];
    for (const [q, ok] of cases) {
      const r = await tryQuery(`subscribe=${q}`);
      expect(ok, `${q.slice(0, 80)} → ${r.status} ${JSON.stringify(r.body)?.slice(0, 200)}`).toContain(r.status);
    }
    // A filtered subscription given with its query unencoded swallows what follows: the list API refuses that filter.
    expect((await tryQuery("subscribe=notes?filter=title:a,tasks")).status).toBe(400);
    // 100 subscriptions are fine, 101 are not; 2,000 characters are fine, 2,001 are not.
    const ids = Array.from({ length: 101 }, (_, i) => `notes/id${i}`);
    expect((await tryQuery(`subscribe=${ids.slice(0, 100).join(",")}`)).subs!.length).toBe(100);
    expect((await tryQuery(`subscribe=${ids.join(",")}`)).status).toBe(400);
    const long = `notes?filter=title:${"x".repeat(2000 - "notes?filter=title:".length)}`;
    expect((await tryQuery(`subscribe=${encodeURIComponent(long)}`)).status).toBe(200);
    expect((await tryQuery(`subscribe=${encodeURIComponent(`${long}x`)}`)).status).toBe(400);
    // The server still serves.
    expect((await s.apiJson("GET", "/api/v1/notes?limit=1")).status).toBe(200);
  });

  test("no event can be forged through a subscription's text or a record's value (newlines, CR, U+2028, NUL-free controls)", async () => {
    const evil = 'notes?filter=title:x\r\n\r\nevent: close\ndata: {"reason":"SHUTDOWN"}\n\n';
    const st = await openSse(rt(`subscribe=notes&subscribe=${encodeURIComponent(evil)}`), auth());
    expect(st.status).toBe(200);
    const c = await st.next(ofKind("connect"));
    // Subscriptions are trimmed; what is left is echoed as JSON, its newlines escaped.
    expect(c.json.subscriptions).toEqual(["notes", evil.trim()]);
    const body = 'a\n\nevent: close\ndata: {"reason":"SHUTDOWN"}\n\nid: 999\r\rretry: 1\u2028\u2029\u0085 end';
    const made = uuidOf(await s.apiJson("POST", "/api/v1/notes", { title: "forge", body }));
    const e = await st.next(ofKind("create", made));
    expect(e.json.record.body).toBe(body);
    await Bun.sleep(200);
    expect(st.events.map((x) => x.event)).toEqual(["connect", "create"]);
    expect(st.events.every((x) => x.id === null || /^[\w-]+-\d+$/.test(x.id))).toBe(true);
    st.close();
  });

  test("a filtered subscription sees the same records as the list API given the same filter text", async () => {
    // Duplicated filter parameters, odd encodings: whatever the list API does with the text, the
    // subscription's set must be the same.
    const weird = ["title:a%252Cb", "title:a+b", "title:a b", "title:%E2%82%AC", "title:€", "title:a&filter=title:b", "title:A"];
    const st = await openSse(rt(weird.map((w) => `subscribe=${encodeURIComponent(`notes?filter=${w}`)}`).join("&")), auth());
    expect(st.status).toBe(200);
    const { json } = await st.next(ofKind("connect"));
    const made: string[] = [];
    for (const title of ["a,b", "a+b", "a b", "€", "a", "b", "A", "%E2%82%AC"]) made.push(uuidOf(await s.apiJson("POST", "/api/v1/notes", { title })));
    const marker = uuidOf(await s.apiJson("POST", "/api/v1/notes", { title: "weird marker" }));
    await s.apiJson("PUT", `/api/v1/notes/${marker}`, { title: "a" });
    await st.next((e) => e.json.uuid === marker);
    await Bun.sleep(200);
    for (const [i, w] of weird.entries()) {
      const text = json.subscriptions[i] as string;
      const list = await s.apiJson("GET", `/api/v1/notes?${text.slice("notes?".length)}`);
      const inList = list.status === 200 ? Object.keys(list.body!.notes).filter((u) => made.includes(u) || u === marker).sort() : null;
      const told = new Set<string>();
      for (const e of st.events.filter((x) => !!x.json.action && (x.json.subscriptions as string[]).includes(text))) {
        if (e.event === "delete") told.delete(e.json.uuid);
        else told.add(e.json.uuid);
      }
      expect([...told].sort(), `${w}`).toEqual(inList!);
    }
    st.close();
  });

  test("Last-Event-ID garbage gets reset, never a 500 or a replay of someone else's numbers", async () => {
    const st = await sub("notes");
    const c = await st.next(ofKind("connect"));
    st.close();
    const instance = (c.id ?? "").replace(/-\d+$/, "");
    expect(instance.length).toBeGreaterThan(0);
    const garbage = [
      "x".repeat(6000), "-1", `${instance}--1`, `${instance}-1.5`, `${instance}-1e400`, `${instance}-1e3`, `${instance}-99999999999999999999`,
      `${instance}-999999999999999`, `${instance.toUpperCase()}x-1`, "other-1", `${instance}-`, `-${instance}-1`, " ", "\t", `${instance}-0x10`, `${instance}-\u0661`,
      `${instance}-NaN`, `${instance}-Infinity`,
    ];
    for (const g of garbage) {
      for (const how of ["header", "query"] as const) {
        const headers = how === "header" && /^[\x20-\x7e\t]*$/.test(g) ? { ...auth(), "last-event-id": g } : auth();
        const q = how === "query" ? `subscribe=notes&last_event_id=${encodeURIComponent(g)}` : "subscribe=notes";
        const r = await openWithin(3000, () => openSse(rt(q), headers));
        expect(r.status, `${how} ${g.slice(0, 40)}`).toBe(200);
        await r.next(ofKind("connect"));
        const sent = how === "query" ? g !== "" : headers !== undefined && "last-event-id" in headers;
        if (sent) {
          const reset = await r.next(ofKind("reset"), 2000).catch(() => null);
          expect(reset, `${how} ${g.slice(0, 40)}`).not.toBeNull();
        }
        expect(r.events.filter((e) => e.event !== "connect" && e.event !== "reset")).toEqual([]);
        r.close();
      }
    }
  });

  test("POST bodies that are not the documented object: 400, and the stream keeps its subscriptions", async () => {
    const st = await sub("tasks");
    const { json } = await st.next(ofKind("connect"));
    const url = `/api/v1/realtime/${json.client_id}`;
    const bad: unknown[] = [
      "not json", "", "null", "[]", "[\"notes\"]", "{\"subscribe\": 5}", "{\"subscribe\": null}", "{\"subscribe\": [1, 2]}", "{\"subscribe\": [\"notes\", null]}",
      "{\"subscribe\": [[\"notes\"]]}", "{\"subscribe\": {\"0\": \"notes\"}}", "{\"__proto__\": {\"subscribe\": [\"notes\"]}}", "{\"subscribe\": [\"notes\"]",
      JSON.stringify({ subscribe: Array.from({ length: 101 }, (_, i) => `notes/id${i}`) }), JSON.stringify({ subscribe: ["notes/" + "a".repeat(3000)] }),
      JSON.stringify({ subscribe: ["notes?filter=secret:x"] }), JSON.stringify({ subscribe: ["nope"] }),
    ];
    for (const body of bad) {
      const r = await call(s.base, "POST", url, { token: s.token, body: body as string });
      expect([400, 404, 415], `${String(body).slice(0, 60)} → ${r.status}`).toContain(r.status);
    }
    // Wrong content types with a good body: either taken or refused clearly, never a 500.
    for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]) {
      const r = await call(s.base, "POST", url, { token: s.token, body: JSON.stringify({ subscribe: ["tasks"] }), headers: { "content-type": type } });
      expect(r.status, type).toBeLessThan(500);
    }
    const t = uuidOf(await s.apiJson("POST", "/api/v1/tasks", { title: "still tasks" }), "tasks");
    await st.next(ofKind("create", t));
    const ok = await call(s.base, "POST", url, { token: s.token, body: { subscribe: "notes,tasks" } });
    expect(ok.status).toBe(200);
    expect(ok.body!.subscriptions).toEqual(["notes", "tasks"]);
    st.close();
  });
});

describe("resource exhaustion", () => {
  test("streams whose client drops the TCP connection free their slot within a few seconds", async () => {
    const u = await userWith("dropper", ["view-notes"]);
    for (let round = 0; round < 2; round++) {
      // Fill the user's six slots with raw connections, then drop them without a word.
      const raws = [];
      for (let i = 0; i < 6; i++) {
        const r = await rawStream(s.base, `Authorization: Bearer ${u.token}\r\n`, "/api/v1/realtime?subscribe=notes");
        raws.push(r);
        const text = await new Promise<string>((resolve) => {
          let got = "";
          r.socket.on("data", (d) => {
            got += d.toString();
            if (got.includes("event: connect")) resolve(got);
          });
          r.socket.resume();
        });
        expect(text).toContain("200 OK");
      }
      const refused = await sub("notes", u.token);
      expect(refused.status).toBe(429);
      expect(refused.body!.message).toBe("TOO_MANY_REQUESTS");
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
      for (const r of raws) r.socket.destroy();
      const again = await openWithin(4000, () => sub("notes", u.token));
      expect(again.status, `round ${round}`).toBe(200);
      again.close();
      await Bun.sleep(300);
    }
  });

  test("a client that resets the connection (RST) or half-closes it frees its slot too", async () => {
    const u = await userWith("resetter", ["view-notes"]);
    const raws = [];
    for (let i = 0; i < 6; i++) {
      const r = await rawStream(s.base, `Authorization: Bearer ${u.token}\r\n`, "/api/v1/realtime?subscribe=notes");
      r.socket.resume();
      raws.push(r);
    }
    await Bun.sleep(300);
    expect((await sub("notes", u.token)).status).toBe(429);
    raws.slice(0, 3).forEach((r) => r.socket.resetAndDestroy());
    raws.slice(3).forEach((r) => r.socket.end());
    const again = await openWithin(4000, () => sub("notes", u.token));
    expect(again.status).toBe(200);
    again.close();
    raws.forEach((r) => r.socket.destroy());
  });

  test("opening and aborting streams in a tight loop leaks no slot", async () => {
    const u = await userWith("looper", ["view-notes", "view-tasks"]);
    for (let i = 0; i < 150; i++) {
      const ac = new AbortController();
      const p = fetch(rt("subscribe=notes,tasks"), { headers: auth(u.token), signal: ac.signal }).catch(() => null);
      if (i % 3 === 0) ac.abort(); // before the answer
      const res = await p;
      if (res && i % 3 === 1) await res.body?.getReader().read().catch(() => null);
      ac.abort();
    }
    // All six slots come back.
    const open: SseStream[] = [];
    for (let i = 0; i < 6; i++) {
      const st = await openWithin(4000, () => sub("notes", u.token));
      expect(st.status, `stream ${i}`).toBe(200);
      open.push(st);
    }
    for (const st of open) st.close();
  });

  test("a stream's memory stays near its buffer whatever its subscriptions: 100 filtered subscriptions do not multiply a change", async () => {
    // A server of its own: the growth of a fresh process's memory is what is measured.
    const site = await adminSite({ defs: { notes }, store: "sqlite" });
    try {
      const big = "z".repeat(1_000_000);
      await site.apiJson("POST", "/api/v1/notes", { title: "warm-up", body: big });
      await Bun.sleep(500);
      const before = rss(site.proc.pid);
      // Three readers that read nothing, each subscribed 100 times to (all of) notes through
      // filters of its own (each text is an event of its own).
      const readers = [];
      for (let r = 0; r < 3; r++) {
        const subs = Array.from({ length: 100 }, (_, i) => `subscribe=${encodeURIComponent(`notes?filter=title:!r${r}x${i}`)}`).join("&");
        readers.push(await rawStream(site.base, `Authorization: Bearer ${site.token}\r\n`, `/api/v1/realtime?${subs}`));
      }
      await Bun.sleep(300);
      // One write of one 1 MB record.
      expect((await site.apiJson("POST", "/api/v1/notes", { title: "huge", body: big })).status).toBe(201);
      await Bun.sleep(800);
      const grown = rss(site.proc.pid) - before;
      for (const r of readers) r.socket.destroy();
      // Three buffers of 1 MiB and a window holding one 1 MB record: well below 60 MB (with one
      // subscription per reader the server grows by about 10 MB here). The change is written into
      // each stream 100 times in one go, past its buffer: 300 MB (about as much is measured).
      expect(grown).toBeLessThan(60 * 1024 * 1024);
    } finally {
      await site.cleanup();
    }
  }, 30_000);
});

describe("filtered subscriptions against the list API", () => {
  test("every field type: the set a filtered subscription reports equals GET ?filter= after creates, updates, deletes and restores", async () => {
    const filters = [
      "title:a", "title:!a", "title:", "title:!", "title:a||b", "title:A", "title:a||", "title:!a||b",
      "status:new", "status:!new", "status:", "status:new||old", "status:!new||old",
      "tags:a", "tags:!a", "tags:", "tags:a||c", "tags:!", "tags:!a||c",
      "n:1", "n:!1", "n:", "n:1||2", "n:0", "n:-0", "n:1.0", "n:1e0", "n:0x1", "n:!", "n:-1.5",
      "done:1", "done:0", "done:!1", "done:!0", "done:", "done:true", "done:no", "done:!",
      "label:hello", "label:!hello", "label:", "label:hallo", "label:hello||bye",
      "day:2024-01-01", "day:!2024-01-01",
      `_created_by:${adminUuid}`, "_modified_by:", "uuid:rec-3", "uuid:!rec-3||rec-4",
      "status:new,done:1", "tags:a,n:!1", "title:a,status:!old,done:0",
    ];
    const st = await openSse(rt(filters.map((f) => `subscribe=${encodeURIComponent(`things?filter=${f}`)}`).join("&")), auth());
    expect(st.status).toBe(200);
    await st.next(ofKind("connect"));
    const put = async (uuid: string, body: Record<string, unknown>) => expect((await s.apiJson("PUT", `/api/v1/things/${uuid}`, body)).status).toBe(200);
    const create = async (uuid: string, body: Record<string, unknown>) => expect((await s.apiJson("POST", "/api/v1/things", { uuid, ...body })).status).toBe(201);
    await create("rec-1", { title: "a", status: "new", tags: ["a", "b"], n: 1, done: true, label: { en: "hello", de: "hallo" }, day: "2024-01-01", secret: "s" });
    await create("rec-2", { title: "b", status: "old", tags: [], n: 2, done: false, label: { en: "", de: null } });
    await create("rec-3", {});
    await create("rec-4", { title: "", status: "", tags: ["c"], n: 0, label: { en: "x" } });
    await create("rec-5", { title: "A", n: -1.5, done: "yes", tags: "a" });
    await put("rec-1", { title: "b", status: "old", tags: ["c"], n: 2, done: false, label: { en: "bye" } });
    await put("rec-2", { done: true, tags: ["a"], title: null });
    await put("rec-3", { title: "a", n: 1 });
    expect((await s.apiJson("DELETE", "/api/v1/things/rec-4")).status).toBe(200);
    await put("rec-5", { n: 1, status: "new", done: 0 });
    expect((await s.apiJson("POST", "/api/v1/things/rec-4/restore", {})).status).toBeLessThan(300);
    await put("rec-1", { secret: "only the hidden field changes" });
    await put("rec-3", { tags: null, label: null, status: null });
    expect((await s.apiJson("DELETE", "/api/v1/things/rec-2")).status).toBe(200);
    await create("rec-6", { title: "a", status: "new", done: true, tags: ["a", "c"], n: 0, label: { de: "hello" } });
    await put("rec-6", { n: -0 });
    // Everything told: a marker on another resource comes after it all.
    const t = uuidOf(await s.apiJson("POST", "/api/v1/tasks", { title: "marker" }), "tasks");
    const marker = await openSse(rt("subscribe=tasks"), auth());
    marker.close();
    await Bun.sleep(300);
    void t;
    // One event per way a change is seen, naming every subscription that sees it so.
    expect(st.events.reduce((n, e) => n + ((e.json.subscriptions as string[] | undefined)?.length ?? 0), 0)).toBeGreaterThan(100);
    const wrong: string[] = [];
    for (const f of filters) {
      const text = `things?filter=${f}`;
      const told = new Set<string>();
      for (const e of st.events.filter((x) => !!x.json.action && (x.json.subscriptions as string[]).includes(text))) {
        if (e.event === "delete") {
          if (!told.has(e.json.uuid)) wrong.push(`${f}: delete of ${e.json.uuid} never in the set`);
          told.delete(e.json.uuid);
        } else if (e.event === "update" || e.event === "bulk") {
          if (e.event === "update" && !told.has(e.json.uuid)) wrong.push(`${f}: update of ${e.json.uuid} never in the set`);
        } else {
          if (told.has(e.json.uuid)) wrong.push(`${f}: ${e.event} of ${e.json.uuid} already in the set`);
          told.add(e.json.uuid);
        }
      }
      const list = await s.apiJson("GET", `/api/v1/things?filter=${encodeURIComponent(f)}`);
      expect(list.status, f).toBe(200);
      const listed = Object.keys(list.body!.things).sort();
      const mine = [...told].sort();
      if (JSON.stringify(listed) !== JSON.stringify(mine)) wrong.push(`${f}: list ${JSON.stringify(listed)} but stream ${JSON.stringify(mine)}`);
    }
    expect(wrong).toEqual([]);
    st.close();
  });
});

describe("filtered subscriptions and definition changes", () => {
  test("after a definition changes a field's type, a filtered subscription still matches as the list API does", async () => {
    const items = { fields: { title: { type: "text" }, tags: { type: "text" }, n: { type: "text" } } };
    const site = await adminSite({ defs: { items } });
    try {
      const h = { authorization: `Bearer ${site.token}` };
      expect((await site.apiJson("POST", "/api/v1/items", { title: "old", tags: "a", n: "1" })).status).toBe(201);
      const subs = ["items?filter=tags:a", "items?filter=n:1"];
      const st = await openSse(`${site.base}/api/v1/realtime?${subs.map((x) => `subscribe=${encodeURIComponent(x)}`).join("&")}`, h);
      await st.next(ofKind("connect"));
      // The site makes tags a list and n a number (records written before keep their values).
      await Bun.write(`${site.dir}/resources/items.json`, JSON.stringify({ fields: { title: { type: "text" }, tags: { type: "text", multi: true }, n: { type: "number" } } }));
      const deadline = Date.now() + 5000;
      let made = await site.apiJson("POST", "/api/v1/items", { title: "new", tags: ["a", "b"], n: 1 });
      while ((made.status !== 201 || typeof Object.values(made.body!.items as Record<string, any>)[0].n !== "number") && Date.now() < deadline) {
        await Bun.sleep(200);
        made = await site.apiJson("POST", "/api/v1/items", { title: "new", tags: ["a", "b"], n: 1 });
      }
      const fresh = Object.keys(made.body!.items)[0];
      expect(made.body!.items[fresh]).toMatchObject({ tags: ["a", "b"], n: 1 });
      const last = Object.keys((await site.apiJson("POST", "/api/v1/items", { title: "last", tags: ["c"], n: 2 })).body!.items)[0];
      await Bun.sleep(500);
      // Written after the change: `fresh` is in both lists, `last` in neither; the stream must say so.
      const wrong: string[] = [];
      for (const text of subs) {
        const listed = Object.keys((await site.apiJson("GET", `/api/v1/items?${text.slice("items?".length)}`)).body!.items);
        expect(listed).toContain(fresh);
        expect(listed).not.toContain(last);
        const told = st.events.filter((x) => !!x.json.action && (x.json.subscriptions as string[]).includes(text) && (x.json.uuid === fresh || x.json.uuid === last)).map((x) => `${x.event} ${x.json.uuid === fresh ? "fresh" : "last"}`);
        if (JSON.stringify(told) !== JSON.stringify(["create fresh"])) wrong.push(`${text}: told ${JSON.stringify(told)}, expected ["create fresh"]`);
      }
      expect(wrong).toEqual([]);
      st.close();
    } finally {
      await site.cleanup();
    }
  }, 30_000);
});

describe("hidden fields and the resume window", () => {
  test("a field hidden by a definition change is not sent when a client resumes into changes made before", async () => {
    const people = { fields: { name: { type: "text" }, ssn: { type: "text" } } };
    const site = await adminSite({ defs: { people }, store: "sqlite" });
    try {
      const h = { authorization: `Bearer ${site.token}` };
      const st = await openSse(`${site.base}/api/v1/realtime?subscribe=people`, h);
      const connect = await st.next(ofKind("connect"));
      st.close();
      await site.apiJson("POST", "/api/v1/people", { name: "Ann", ssn: "ssn-123-45-6789" });
      // The owner notices and hides the field.
      await Bun.write(`${site.dir}/resources/people.json`, JSON.stringify({ ...people, hidden: "ssn" }));
      const deadline = Date.now() + 5000;
      while (Date.now() < deadline) {
        const list = await site.apiJson("GET", "/api/v1/people");
        if (!JSON.stringify(list.body).includes("ssn-123")) break;
        await Bun.sleep(200);
      }
      expect(JSON.stringify((await site.apiJson("GET", "/api/v1/people")).body)).not.toContain("ssn-123");
      const resumed = await openSse(`${site.base}/api/v1/realtime?subscribe=people`, { ...h, "last-event-id": connect.id! });
      const e = await resumed.next((x) => x.event === "create" || x.event === "reset");
      if (e.event === "create") expect(e.data).not.toContain("ssn-123");
      resumed.close();
    } finally {
      await site.cleanup();
    }
  }, 30_000);
});

describe("concurrency", () => {
  test("writes racing the opening of streams: every change after a stream's connect id reaches it, none twice", async () => {
    let stop = false;
    const writer = (async () => {
      let i = 0;
      while (!stop) {
        const batch = [0, 1, 2].map(() => s.apiJson("POST", "/api/v1/tasks", { title: `w${i++}` }));
        await Promise.all(batch);
      }
    })();
    const streams: SseStream[] = [];
    for (let i = 0; i < 5; i++) {
      await Bun.sleep(40);
      const st = await sub("tasks");
      expect(st.status).toBe(200);
      await st.next(ofKind("connect"));
      streams.push(st);
    }
    await Bun.sleep(200);
    stop = true;
    await writer;
    const last = uuidOf(await s.apiJson("POST", "/api/v1/tasks", { title: "the last" }), "tasks");
    for (const st of streams) {
      const end = await st.next(ofKind("create", last));
      // The connect event names where the stream starts, in its data as in its SSE id.
      const connect = st.events[0];
      const from = Number(connect.id!.split("-").pop());
      expect(connect.json.id, `connect ${connect.id} ${connect.data}`).toBe(from);
      const ids = st.events.filter((e) => e.event === "create").map((e) => e.json.id as number);
      // Only tasks are written meanwhile: the ids are every number from connect's on, in order.
      expect(ids[0]).toBe(from + 1);
      expect(ids.at(-1)).toBe(end.json.id);
      expect(ids).toEqual(Array.from({ length: ids.length }, (_, k) => from + 1 + k));
      st.close();
    }
  });

  test("resubscribing while writes go on: everything written after the answer is told, nothing of the old subscription after it", async () => {
    for (let round = 0; round < 3; round++) {
      const st = await sub("notes");
      const { json } = await st.next(ofKind("connect"));
      let stop = false;
      const written: { resource: string; uuid: string; at: "before" | "after" }[] = [];
      let answered = false;
      const writer = (async () => {
        let i = 0;
        while (!stop) {
          const resource = i % 2 ? "notes" : "tasks";
          const startedAfter = answered;
          const r = await s.apiJson("POST", `/api/v1/${resource}`, { title: `rs${round} ${i++}` });
          written.push({ resource, uuid: uuidOf(r, resource), at: startedAfter ? "after" : "before" });
        }
      })();
      await Bun.sleep(100);
      const r = await call(s.base, "POST", `/api/v1/realtime/${json.client_id}`, { token: s.token, body: { subscribe: ["tasks"] } });
      answered = true;
      expect(r.status).toBe(200);
      await Bun.sleep(150);
      stop = true;
      await writer;
      const last = uuidOf(await s.apiJson("POST", "/api/v1/tasks", { title: "rs last" }), "tasks");
      await st.next(ofKind("create", last));
      const told = new Set(st.events.map((e) => e.json.uuid));
      for (const w of written.filter((x) => x.at === "after")) expect(told.has(w.uuid), `${w.resource} ${w.uuid}`).toBe(w.resource === "tasks");
      st.close();
    }
  });

  test("a token that expires: nothing committed after its expiry reaches the stream", async () => {
    const short = await adminSite({ defs: { notes }, store: "sqlite", env: { RESD_TOKEN_TTL: "2", RESD_SESSION_TTL: "3" } });
    try {
      // Meanwhile a session whose only use is its open stream: the doc says that keeps it alive.
      const signIn = await fetch(`${short.base}/api/v1/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: short.email, password: "admin-password" }) });
      const kept = signIn.headers.get("set-cookie")!.split(";")[0];
      const byCookie = await openSse(`${short.base}/api/v1/realtime?subscribe=notes`, { cookie: kept });
      await byCookie.next(ofKind("connect"));
      const token = await tokenFor(short.base, short.email, "admin-password");
      const st = await openSse(`${short.base}/api/v1/realtime?subscribe=notes`, { authorization: `Bearer ${token}` });
      const opened = Date.now();
      await st.next(ofKind("connect"));
      // The writer signs in with a session (tokens live 2 s here); it writes every 50 ms past the stream token's expiry.
      const login = await fetch(`${short.base}/api/v1/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: short.email, password: "admin-password" }) });
      const cookie = login.headers.get("set-cookie")!.split(";")[0];
      const late: { uuid: string; at: number }[] = [];
      while (Date.now() - opened < 3500) {
        const r = await call(short.base, "POST", "/api/v1/notes", { body: { title: "tick" }, headers: { cookie, origin: short.base } });
        expect(r.status).toBe(201);
        late.push({ uuid: Object.keys(r.body!.notes)[0], at: Date.now() });
        await Bun.sleep(50);
      }
      const closed = await st.next(ofKind("close"), 3000);
      expect(closed.json.reason).toBe("UNAUTHORIZED");
      // `at` is when the write's answer came: it committed before. The doc has a stream's rights
      // worked out again every second: a write answered more than 1.2 s after the token's `exp` (second
      // precision) must not be told. (Writes in the second after `exp` still are: see the report.)
      const exp = (JSON.parse(Buffer.from(token.split(".")[1], "base64url").toString()) as { exp: number }).exp * 1000;
      const told = new Set(st.events.map((e) => e.json.uuid));
      const afterExpiry = late.filter((w) => w.at > exp + 1200 && told.has(w.uuid)).map((w) => `${w.at - exp} ms after expiry`);
      expect(afterExpiry).toEqual([]);
      expect(closed.json.reason).toBe("UNAUTHORIZED");
      // More than the session's 3 s later, its stream is still open and the session still signs in.
      expect(byCookie.events.some((e) => e.event === "close")).toBe(false);
      expect((await call(short.base, "GET", "/api/v1/session", { headers: { cookie: kept } })).status).toBe(200);
      byCookie.close();
    } finally {
      await short.cleanup();
    }
  }, 30_000);

  test("SIGTERM with open streams: each gets close SHUTDOWN and the server exits at once, well within its shutdown timeout", async () => {
    const site = await adminSite({ defs: { notes }, store: "sqlite", env: { RESD_SHUTDOWN_TIMEOUT: "8" } });
    const h = { authorization: `Bearer ${site.token}` };
    const streams: SseStream[] = [];
    for (let i = 0; i < 4; i++) {
      const st = await openSse(`${site.base}/api/v1/realtime?subscribe=notes`, h);
      await st.next(ofKind("connect"));
      streams.push(st);
    }
    const t = Date.now();
    site.proc.kill("SIGTERM");
    for (const st of streams) {
      const e = await st.next(ofKind("close"), 5000);
      expect(e.json.reason).toBe("SHUTDOWN");
      await st.ended;
    }
    const code = await Promise.race([site.proc.exited, Bun.sleep(9000).then(() => "hung")]);
    const took = Date.now() - t;
    if (code === "hung") site.proc.kill("SIGKILL");
    expect(code).toBe(0);
    expect(took).toBeLessThan(3000);
    await site.cleanup();
  }, 30_000);

  test("SIGTERM with a reader that reads nothing: the server still exits within its shutdown timeout", async () => {
    const site = await adminSite({ defs: { notes }, store: "sqlite", env: { RESD_SHUTDOWN_TIMEOUT: "2", RESD_REALTIME_BUFFER: "4096" } });
    const stuck = await rawStream(site.base, `Authorization: Bearer ${site.token}\r\n`, "/api/v1/realtime?subscribe=notes");
    await Bun.sleep(200);
    for (let i = 0; i < 20; i++) await site.apiJson("POST", "/api/v1/notes", { title: "x".repeat(1000), body: "y".repeat(200_000) });
    const t = Date.now();
    site.proc.kill("SIGTERM");
    const code = await Promise.race([site.proc.exited, Bun.sleep(8000).then(() => "hung")]);
    const took = Date.now() - t;
    if (code === "hung") site.proc.kill("SIGKILL");
    stuck.socket.destroy();
    expect(code).toBe(0);
    expect(took).toBeLessThan(4500);
    await site.cleanup();
  }, 30_000);
});

describe("realtime off, and streams that last", () => {
  test("RESD_REALTIME_MAX_STREAMS=0: 503 for the stream and the resubscribe", async () => {
    const off = await adminSite({ defs: { notes }, store: "sqlite", env: { RESD_REALTIME_MAX_STREAMS: "0" } });
    try {
      const st = await openSse(`${off.base}/api/v1/realtime?subscribe=notes`, { authorization: `Bearer ${off.token}` });
      expect(st.status).toBe(503);
      expect((await call(off.base, "POST", "/api/v1/realtime/abc", { token: off.token, body: { subscribe: ["notes"] } })).status).toBe(503);
    } finally {
      await off.cleanup();
    }
  });

  test("a stream outlives the server's 30 s idle timeout, at /api/v1/realtime and at /api/v1/realtime/ alike", async () => {
    const waited = Date.now() - longLivedSince;
    if (waited < 34_000) await Bun.sleep(34_000 - waited);
    const t = uuidOf(await s.apiJson("POST", "/api/v1/tasks", { title: "still here" }), "tasks");
    const got = await Promise.all(longLived.map((st) => st.next(ofKind("create", t), 3000).then(() => "told", () => "cut")));
    for (const st of longLived) st.close();
    expect(got).toEqual(["told", "told"]);
  }, 60_000);

  test("a resource removed from the definitions ends its subscriptions with RESOURCE_NOT_FOUND; the others go on", async () => {
    const st = await openSse(rt(`subscribe=tasks&subscribe=${encodeURIComponent("things?filter=status:new")}&subscribe=things`), auth());
    await st.next(ofKind("connect"));
    rmSync(`${s.dir}/resources/things.json`);
    const first = await st.next(ofKind("unsubscribed"), 5000);
    await Bun.sleep(300);
    const gone = st.events.filter((e) => e.event === "unsubscribed").map((e) => e.json);
    expect(first.json.reason).toBe("RESOURCE_NOT_FOUND");
    expect(gone).toEqual(expect.arrayContaining([{ subscription: "things?filter=status:new", reason: "RESOURCE_NOT_FOUND" }, { subscription: "things", reason: "RESOURCE_NOT_FOUND" }]));
    expect(gone.length).toBe(2);
    const t = uuidOf(await s.apiJson("POST", "/api/v1/tasks", { title: "after removal" }), "tasks");
    await st.next(ofKind("create", t));
    st.close();
  });
});

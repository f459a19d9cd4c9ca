/**
 * agent-chat and agent-remote under hostile or careless use, black-box: racing posts, another
 * site's page riding a session, another user's stream, a conversation deleted or a right lost while
 * a run works, oversized input, and a home whose provider credits another site would spend.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { adminSite } from "./helpers/site";
import { call, tokenFor } from "./helpers/access";
import { fakeAi } from "./helpers/fake-ai";
import { openSse } from "./helpers/sse";

const notes = { fields: { title: { type: "text", required: true } } };
const ai = fakeAi();
let s: Awaited<ReturnType<typeof adminSite>>;
const tokens: Record<string, string> = {};
const roles: Record<string, string> = {};
const uuids: Record<string, string> = {};

async function userWith(name: string, permissions: string[]): Promise<void> {
  const role = await s.apiJson("POST", "/api/v1/roles", { name, permissions });
  roles[name] = Object.keys(role.body!.roles)[0];
  const user = await s.apiJson("POST", "/api/v1/users", { email: `${name}@example.com`, password: `${name}-password-1`, role: roles[name], api: true });
  uuids[name] = Object.keys(user.body!.users)[0];
  tokens[name] = await tokenFor(s.base, `${name}@example.com`, `${name}-password-1`);
}
const chat = (who: string, body: Record<string, unknown>) => call(s.base, "POST", "/api/v1/agent-chat", { token: tokens[who], body });
async function settled(who: string, uuid: string): Promise<Record<string, any>> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const v = (await chat(who, { operation: "get", uuid })).body!;
    if (!v.working.some((w: { status: string }) => w.status === "working")) return v;
    if (Date.now() > deadline) throw new Error(`still working: ${JSON.stringify(v)}`);
    await Bun.sleep(50);
  }
}

beforeAll(async () => {
  s = await adminSite({
    defs: { notes },
    env: { AI_API_KEY: "test-key", AI_BASE_URL: ai.base, AI_MODEL: "fake", RESD_JOB_POLL: "50", RESD_JOB_ATTEMPTS: "1", RESD_AI_RATE: "12" },
  });
  await userWith("alice", ["chat-resd", "view-notes"]);
  await userWith("racer", ["chat-resd", "view-notes"]);
  await userWith("mallory", ["chat-resd", "view-notes"]);
  await userWith("fickle", ["chat-resd", "view-notes"]);
  await userWith("remote", ["chat-resd", "agent-remote", "view-notes"]);
});
afterAll(async () => {
  await s.cleanup();
  ai.stop();
});

describe("agent-chat attacks", () => {
  test("eight racing posts to one idle conversation: exactly one starts a run, the others get 409 and store nothing", async () => {
    ai.script({ text: "first" });
    const first = await chat("racer", { operation: "post", text: "start" });
    const uuid = first.body!.uuid as string;
    await settled("racer", uuid);
    let release = () => {};
    ai.script({ text: "only one", pause: new Promise<void>((r) => (release = r)) });
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => chat("racer", { operation: "post", uuid, text: `race ${i}` })));
    const codes = answers.map((a) => a.status).sort();
    expect(codes.filter((c) => c === 200)).toHaveLength(1);
    expect(codes.filter((c) => c === 409)).toHaveLength(7);
    release();
    const v = await settled("racer", uuid);
    expect(v.messages.filter((m: { text: string }) => m.text.startsWith("race "))).toHaveLength(1);
    expect(v.messages.at(-1).text).toBe("only one");
  });

  test("a session cookie from another site's page cannot post; GET cannot post either", async () => {
    const login = await call(s.base, "POST", "/api/v1/session", { body: { email: "alice@example.com", password: "alice-password-1" } });
    const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0];
    const before = (await chat("alice", { operation: "list" })).body!.conversations.length;
    const cross = await call(s.base, "POST", "/api/v1/agent-chat", { body: { operation: "post", text: "from evil.example" }, headers: { cookie, origin: "https://evil.example" } });
    expect(cross.status).toBe(403);
    const viaGet = await call(s.base, "GET", "/api/v1/agent-chat?operation=post&text=img-tag", { headers: { cookie } });
    expect(viaGet.status).toBe(405);
    expect((await chat("alice", { operation: "list" })).body!.conversations.length).toBe(before);
    // The admin's own pages (same origin) may.
    const own = await call(s.base, "GET", "/api/v1/agent-chat?operation=unread", { headers: { cookie } });
    expect(own.status).toBe(200);
  });

  test("another user's events stream is 404 and carries nothing; a garbage uuid is 404", async () => {
    const mine = (await chat("racer", { operation: "list" })).body!.conversations[0].uuid as string;
    const sse = await openSse(`${s.base}/api/v1/agent-chat?operation=events&uuid=${mine}`, { authorization: `Bearer ${tokens.mallory}` });
    expect(sse.status).toBe(404);
    expect(sse.body!.message).toBe("RESOURCE_NOT_FOUND");
    for (const uuid of ["../../etc/passwd", "' OR 1=1 --", "x".repeat(5000)]) {
      expect((await chat("mallory", { operation: "get", uuid })).status).toBe(404);
    }
    expect((await chat("mallory", { operation: "get", uuid: { $ne: null } })).status).toBe(404);
  });

  test("a conversation deleted while its run works: the run ends quietly, nothing comes back, the server goes on", async () => {
    let release = () => {};
    ai.script({ text: "too late", pause: new Promise<void>((r) => (release = r)) });
    const posted = await chat("mallory", { operation: "post", text: "answer slowly" });
    const uuid = posted.body!.uuid as string;
    const deadline = Date.now() + 5000;
    while (ai.requests.at(-1)?.messages.at(-1)?.content !== "answer slowly" && Date.now() < deadline) await Bun.sleep(20);
    expect((await chat("mallory", { operation: "delete", uuid })).status).toBe(200);
    release();
    await Bun.sleep(300);
    expect((await chat("mallory", { operation: "get", uuid })).status).toBe(404);
    expect((await chat("mallory", { operation: "list" })).body!.conversations.map((c: { uuid: string }) => c.uuid)).not.toContain(uuid);
    ai.script({ text: "still here" });
    const next = await chat("mallory", { operation: "post", text: "are you there?" });
    expect((await settled("mallory", next.body!.uuid)).messages.at(-1).text).toBe("still here");
  });

  test("a user who loses chat-resd before the run starts gets a failed run, and no provider call", async () => {
    let release = () => {};
    let release2 = () => {};
    ai.script({ text: "blocking", pause: new Promise<void>((r) => (release = r)) }, { text: "blocking too", pause: new Promise<void>((r) => (release2 = r)) });
    // Two runs keep both workers busy, so fickle's run waits in the queue.
    const a = await chat("alice", { operation: "post", text: "busy 1" });
    const m = await chat("mallory", { operation: "post", text: "busy 2" });
    const posted = await chat("fickle", { operation: "post", text: "do something" });
    expect(posted.status).toBe(200);
    await s.apiJson("PATCH", `/api/v1/roles/${roles.fickle}`, { permissions: ["view-notes"] });
    const calls = ai.requests.length;
    release();
    release2();
    await settled("alice", a.body!.uuid);
    await settled("mallory", m.body!.uuid);
    const admin = (uuid: string) => call(s.base, "POST", "/api/v1/agent-chat", { token: s.token, body: { operation: "get", uuid } });
    // fickle may no longer use the chat at all; the run's state is stored all the same.
    expect((await chat("fickle", { operation: "get", uuid: posted.body!.uuid })).status).toBe(403);
    expect((await admin(posted.body!.uuid)).status).toBe(404);
    await s.apiJson("PATCH", `/api/v1/roles/${roles.fickle}`, { permissions: ["chat-resd", "view-notes"] });
    const v = await settled("fickle", posted.body!.uuid);
    expect(v.working).toMatchObject([{ status: "failed" }]);
    expect(v.working[0].error).toContain("chat-resd");
    expect(ai.requests.length).toBe(calls);
  });

  test("a body past the upload bound is 413; exactly 8,000 characters are accepted", async () => {
    const huge = await call(s.base, "POST", "/api/v1/agent-chat", { token: tokens.mallory, body: JSON.stringify({ operation: "post", text: "x".repeat(60 * 1024 * 1024) }) });
    expect([413, 422]).toContain(huge.status);
    ai.script({ text: "long read" });
    const ok = await chat("alice", { operation: "post", text: "y".repeat(8000) });
    expect(ok.status).toBe(200);
    await settled("alice", ok.body!.uuid);
  });
});

describe("agent-remote attacks", () => {
  test("asks from another site count against the home user's AI rate: 429 past it, and asking the same run again is free", async () => {
    ai.script(...Array.from({ length: 12 }, () => ({ text: "remote answer" })));
    const ask = (run: string) => call(s.base, "POST", "/api/v1/agent-remote", { token: tokens.remote, body: { operation: "ask", conversation: `c-${run}`, owner: "x@hub", agent: "resd", run, message: "hi", may_act: true, messages: [] } });
    for (let i = 0; i < 12; i++) expect((await ask(`r${i}`)).status).toBe(200);
    expect((await ask("r0")).status).toBe(200);
    const over = await ask("r99");
    expect(over.status).toBe(429);
    expect(over.body!.message).toBe("TOO_MANY_REQUESTS");
  });

  test("the home user's remote conversations are not in the chat of anyone else, and a session cannot call agent-remote", async () => {
    const login = await call(s.base, "POST", "/api/v1/session", { body: { email: "remote@example.com", password: "remote-password-1" } });
    const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0];
    const viaSession = await call(s.base, "POST", "/api/v1/agent-remote", { body: { operation: "updates", since: 0 }, headers: { cookie, origin: s.base } });
    expect(viaSession.status).toBe(401);
    const theirs = (await chat("alice", { operation: "list" })).body!.conversations.map((c: { title: string }) => c.title);
    expect(theirs.some((t: string) => t.includes("asked from another site"))).toBe(false);
    const mallory = await call(s.base, "POST", "/api/v1/agent-remote", { token: tokens.mallory, body: { operation: "updates", since: 0 } });
    expect(mallory.status).toBe(403);
  });
});

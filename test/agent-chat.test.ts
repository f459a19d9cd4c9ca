/**
 * /api/v1/agent-chat, black-box: conversations with agents through the real server, whose runs are
 * jobs of the durable queue talking to a scripted chat-completions server on 127.0.0.1.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { adminSite } from "./helpers/site";
import { call, tokenFor, type Reply as HttpReply } from "./helpers/access";
import { fakeAi, type ChatRequest } from "./helpers/fake-ai";
import { openSse } from "./helpers/sse";

const notes = { fields: { title: { type: "text", required: true }, status: { type: "select", options: { new: "New", done: "Done" } } } };
const secrets = { fields: { title: { type: "text" } } };

const ai = fakeAi();
let s: Awaited<ReturnType<typeof adminSite>>;
const tokens: Record<string, string> = {};
const uuids: Record<string, string> = {};

async function userWith(name: string, permissions: string[]): Promise<void> {
  const role = await s.apiJson("POST", "/api/v1/roles", { name, permissions });
  const roleId = Object.keys(role.body!.roles)[0];
  const user = await s.apiJson("POST", "/api/v1/users", { email: `${name}@example.com`, password: `${name}-password`, role: roleId, api: true });
  uuids[name] = Object.keys(user.body!.users)[0];
  tokens[name] = await tokenFor(s.base, `${name}@example.com`, `${name}-password`);
}

const chat = (who: string, body: Record<string, unknown>) => call(s.base, "POST", "/api/v1/agent-chat", { token: tokens[who], body });
const chatGet = (who: string, query: string) => call(s.base, "GET", `/api/v1/agent-chat?${query}`, { token: tokens[who] });

/** Polls `get` until `done` holds for the conversation (the run is a job: it answers later). */
async function until(who: string, uuid: string, done: (v: Record<string, any>) => boolean, ms = 10_000): Promise<Record<string, any>> {
  const deadline = Date.now() + ms;
  let last: HttpReply | null = null;
  while (Date.now() < deadline) {
    last = await chat(who, { operation: "get", uuid });
    if (last.status === 200 && done(last.body!)) return last.body!;
    await Bun.sleep(50);
  }
  throw new Error(`the conversation did not get there: ${JSON.stringify(last?.body)}`);
}
const replied = (n: number) => (v: Record<string, any>) => v.messages.filter((m: { from: string }) => m.from !== "user").length >= n && !v.working.some((w: { status: string }) => w.status === "working");

const toolNames = (r: ChatRequest) => (r.tools ?? []).map((t) => t.function.name).sort();
const toolAnswers = (r: ChatRequest) => r.messages.filter((m) => m.role === "tool").map((m) => JSON.parse(m.content ?? "null"));

beforeAll(async () => {
  s = await adminSite({
    defs: { notes, secrets },
    files: { "agents/helper.json": JSON.stringify({ name: "Helper", instructions: "You help." }) },
    env: { AI_API_KEY: "test-key", AI_BASE_URL: ai.base, AI_MODEL: "fake", RESD_JOB_POLL: "50", RESD_JOB_BACKOFF: "100", RESD_JOB_ATTEMPTS: "2", RESD_AGENT_STEPS: "3", RESD_AGENT_TOOL_ANSWER: "300", RESD_AGENT_MESSAGES: "6", RESD_AI_RATE: "10" },
  });
  await s.apiJson("POST", "/api/v1/notes/n1", { title: "Draft", status: "new" });
  await s.apiJson("POST", "/api/v1/notes/n2", { title: "Old", status: "done" });
  await s.apiJson("POST", "/api/v1/secrets/s1", { title: "classified" });
  await userWith("editor", ["chat-resd", "agent-act", "view-notes", "edit-notes"]);
  await userWith("reader", ["chat-resd", "view-notes", "edit-notes"]);
  await userWith("other", ["chat-resd", "view-notes"]);
  await userWith("nochat", ["view-notes", "agent-act"]);
  await userWith("counted", ["chat-resd", "view-notes"]);
});
afterAll(async () => {
  await s.cleanup();
  ai.stop();
});

describe("agent-chat: a run works with the asker's rights", () => {
  test("with agent-act: the agent lists, then updates; the change is in history under the asker, through agent resd", async () => {
    ai.script(
      { tools: [{ name: "list_records", arguments: { resource: "notes", filter: "status:new" } }] },
      { tools: [{ name: "update_record", arguments: { resource: "notes", uuid: "n1", changes: { status: "done" } } }] },
      { text: "I marked the note Draft as done." },
    );
    const from = ai.requests.length;
    const posted = await chat("editor", { operation: "post", text: "Mark the new notes as done" });
    expect(posted.status).toBe(200);
    const v = posted.body!;
    expect(v.team).toEqual({ resd: "resd" });
    expect(v.messages).toHaveLength(1);
    expect(v.messages[0]).toMatchObject({ from: "user", text: "Mark the new notes as done" });
    expect(v.working).toMatchObject([{ agent: "resd", status: "working" }]);
    const done = await until("editor", v.uuid, replied(1));
    const reply = done.messages.at(-1);
    expect(reply).toMatchObject({ from: "resd", text: "I marked the note Draft as done.", link: "/admin/notes/n1" });
    expect(reply.steps).toEqual(["listed 1 of 1 notes", "updated notes/n1"]);
    const got = await s.apiJson("GET", "/api/v1/notes/n1");
    expect(got.body!.notes.n1.status).toBe("done");
    const history = await s.apiJson("GET", "/api/v1/notes/n1/history");
    const last = history.body!.history.at(-1);
    expect(last).toMatchObject({ action: "update", user: uuids.editor, via: "resd" });
    const asked = ai.requests.slice(from);
    expect(toolNames(asked[0])).toContain("update_record");
    expect(toolAnswers(asked[1])[0].records.n1.title).toBe("Draft");
    // A second question goes to the agent last involved and carries the conversation so far.
    ai.script({ text: "You are welcome." });
    const again = await chat("editor", { operation: "post", uuid: v.uuid, text: "Thanks" });
    expect(again.status).toBe(200);
    const after = await until("editor", v.uuid, replied(2));
    expect(after.messages.map((m: { text: string }) => m.text)).toEqual(["Mark the new notes as done", "I marked the note Draft as done.", "Thanks", "You are welcome."]);
    expect(ai.requests.at(-1)!.messages.filter((m) => m.role !== "system").map((m) => m.content)).toEqual(["Mark the new notes as done", "I marked the note Draft as done.", "Thanks"]);
  });

  test("without agent-act: no write tool is offered, a write the model asks for anyway is refused, nothing changes", async () => {
    await s.apiJson("PATCH", "/api/v1/notes/n2", { status: "done" });
    ai.script(
      { tools: [{ name: "update_record", arguments: { resource: "notes", uuid: "n2", changes: { status: "new" } } }] },
      { text: "I cannot change records for you." },
    );
    const from = ai.requests.length;
    const posted = await chat("reader", { operation: "post", text: "Reopen the note Old" });
    const done = await until("reader", posted.body!.uuid, replied(1));
    expect(done.messages.at(-1).text).toBe("I cannot change records for you.");
    const asked = ai.requests.slice(from);
    expect(toolNames(asked[0])).toEqual(["find_files", "find_pages", "list_records", "list_resources", "read_record", "translate"]);
    expect(asked[0].messages[0].content).toContain("You may only read");
    expect(toolAnswers(asked[1])[0].error).toMatchObject({ status: 403, message: "ACCESS_DENIED" });
    expect((await s.apiJson("GET", "/api/v1/notes/n2")).body!.notes.n2.status).toBe("done");
  });

  test("a tool call on a resource the asker may not view answers as the API would (403), and the model is told", async () => {
    ai.script({ tools: [{ name: "list_records", arguments: { resource: "secrets" } }] }, { text: "That is not open to you." });
    const from = ai.requests.length;
    const posted = await chat("editor", { operation: "post", text: "What secrets are there?" });
    const done = await until("editor", posted.body!.uuid, replied(1));
    const answer = toolAnswers(ai.requests[from + 1])[0];
    expect(answer.error.status).toBe(403);
    expect(answer.error.message).toBe("ACCESS_DENIED");
    expect(answer.error.needs).toContain("view-secrets");
    expect(JSON.stringify(ai.requests.slice(from))).not.toContain("classified");
    expect(done.messages.at(-1).steps[0]).toContain("refused (403");
  });
});

describe("agent-chat: conversations belong to their owner", () => {
  test("another user sees none of them: not in list, 404 on get, read, delete and post; the record API does not serve them", async () => {
    const mine = await chat("editor", { operation: "list" });
    expect(mine.status).toBe(200);
    expect(mine.body!.conversations.length).toBeGreaterThan(0);
    const uuid = mine.body!.conversations[0].uuid as string;
    expect(mine.body!.conversations[0]).toMatchObject({ uuid, waiting: false });
    // updated_at is milliseconds, like a message's `at`: the latest message's time at least.
    const latest = (await chat("editor", { operation: "get", uuid })).body!.messages.at(-1).at as number;
    expect(mine.body!.conversations[0].updated_at).toBeGreaterThanOrEqual(latest);
    expect(mine.body!.conversations[0].updated_at).toBeLessThanOrEqual(Date.now());
    const theirs = await chat("other", { operation: "list" });
    expect(theirs.body!.conversations).toEqual([]);
    for (const operation of ["get", "read", "delete"]) {
      const r = await chat("other", { operation, uuid });
      expect(r.status).toBe(404);
      expect(r.body!.message).toBe("RESOURCE_NOT_FOUND");
    }
    const r = await chat("other", { operation: "post", uuid, text: "hello" });
    expect(r.status).toBe(404);
    for (const path of ["/api/v1/.agent_conversations", `/api/v1/.agent_conversations/${uuid}`]) {
      expect((await s.apiJson("GET", path)).status).toBe(404);
    }
    expect((await chat("editor", { operation: "get", uuid })).status).toBe(200);
  });

  test("unread counts agents' replies until the owner reads; delete removes the conversation", async () => {
    const list = await chat("editor", { operation: "list" });
    const c = list.body!.conversations.find((x: { unread: number }) => x.unread > 0);
    expect(c).toBeDefined();
    const before = await chatGet("editor", "operation=unread");
    expect(before.status).toBe(200);
    expect(before.body!.unread).toBeGreaterThan(0);
    expect(before.body!.waiting).toBe(0);
    expect((await chat("editor", { operation: "read", uuid: c.uuid })).body).toMatchObject({ ok: true });
    const after = await chatGet("editor", "operation=unread");
    expect(after.body!.unread).toBe(before.body!.unread - c.unread);
    expect((await chat("editor", { operation: "delete", uuid: c.uuid })).body).toMatchObject({ ok: true });
    expect((await chat("editor", { operation: "get", uuid: c.uuid })).status).toBe(404);
  });
});

describe("agent-chat: errors", () => {
  test("403 without any chat-<agent>, naming chat-resd; 401 without a user", async () => {
    const r = await chat("nochat", { operation: "list" });
    expect(r.status).toBe(403);
    expect(r.body!.message).toBe("ACCESS_DENIED");
    expect(r.body!.needs).toContain("chat-resd");
    expect((await call(s.base, "GET", "/api/v1/agent-chat?operation=list")).status).toBe(401);
  });

  test("422 for empty or too long text, 400 for an unknown operation, 405 for a write sent as GET", async () => {
    for (const text of ["", "   ", undefined, 42]) {
      const r = await chat("editor", { operation: "post", text });
      expect(r.status).toBe(422);
      expect(r.body!.message).toBe("INVALID_DATA");
    }
    const long = await chat("editor", { operation: "post", text: "x".repeat(8001) });
    expect(long.status).toBe(422);
    expect(long.body!.errors.text).toContain("8000");
    expect((await chat("editor", { operation: "shout" })).status).toBe(400);
    const viaGet = await chatGet("editor", "operation=post&text=hello");
    expect(viaGet.status).toBe(405);
    expect((await chat("editor", { operation: "list" })).body!.conversations.every((c: { title: string }) => c.title !== "hello")).toBe(true);
  });

  test("404 for an unknown conversation; 403 for an @mention of an agent the user may not ask", async () => {
    const r = await chat("editor", { operation: "get", uuid: crypto.randomUUID() });
    expect(r.status).toBe(404);
    expect((await chat("editor", { operation: "post", uuid: "nope", text: "hi" })).status).toBe(404);
    const mention = await chat("editor", { operation: "post", text: "@helper please look at n1" });
    expect(mention.status).toBe(403);
    expect([mention.body!.needs].flat()).toEqual(["chat-helper"]);
    // An @word that names no agent is only text: this goes to the default agent.
    ai.script({ text: "Noted." });
    const plain = await chat("editor", { operation: "post", text: "mail @someone about n1" });
    expect(plain.status).toBe(200);
    expect(plain.body!.working[0].agent).toBe("resd");
    await until("editor", plain.body!.uuid, replied(1));
  });

  test("409 while that agent is still answering; the SSE stream carries the streamed text, each step and the end", async () => {
    let release = () => {};
    const pause = new Promise<void>((r) => (release = r));
    ai.script(
      { tools: [{ name: "read_record", arguments: { resource: "notes", uuid: "n2" } }] },
      { text: "The note Old is done already.", pause },
    );
    const posted = await chat("editor", { operation: "post", text: "How is the note Old?" });
    const uuid = posted.body!.uuid as string;
    const busy = await chat("editor", { operation: "post", uuid, text: "Hurry up" });
    expect(busy.status).toBe(409);
    expect(busy.body!.message).toBe("CONFLICT");
    const sse = await openSse(`${s.base}/api/v1/agent-chat?operation=events&uuid=${uuid}`, { authorization: `Bearer ${tokens.editor}` });
    expect(sse.status).toBe(200);
    expect(sse.headers.get("content-type")).toStartWith("text/event-stream");
    const state = await sse.next((e) => e.event === "state");
    expect(state.json.uuid).toBe(uuid);
    const first = await sse.next((e) => e.event === "text");
    expect(first.json).toMatchObject({ agent: "resd", delta: "The " });
    const waiting = await chatGet("editor", "operation=unread");
    expect(waiting.body!.waiting).toBe(1);
    release();
    const done = await sse.next((e) => e.event === "done");
    expect(done.json.message.text).toBe("The note Old is done already.");
    const texts = sse.events.filter((e) => e.event === "text").map((e) => e.json.delta).join("");
    expect(texts).toBe("The note Old is done already.");
    await sse.ended;
    const view = await chat("editor", { operation: "get", uuid });
    expect(view.body!.messages.at(-1).steps).toEqual(["read notes/n2"]);
    expect(view.body!.working).toEqual([]);
  });

  test("a follower who comes in the middle of a reply gets state, then the text streamed so far, then the rest", async () => {
    let release = () => {};
    const pause = new Promise<void>((r) => (release = r));
    ai.script({ text: "Half of the answer, then the other half.", pause });
    const posted = await chat("editor", { operation: "post", text: "Tell me in two halves" });
    const uuid = posted.body!.uuid as string;
    const url = `${s.base}/api/v1/agent-chat?operation=events&uuid=${uuid}`;
    const early = await openSse(url, { authorization: `Bearer ${tokens.editor}` });
    expect((await early.next((e) => e.event === "text")).json.delta).toBe("Half");
    const late = await openSse(url, { authorization: `Bearer ${tokens.editor}` });
    await late.next((e) => e.event === "text");
    expect(late.events.map((e) => e.event)).toEqual(["state", "text"]);
    expect(late.events[1].json).toMatchObject({ agent: "resd", delta: "Half" });
    release();
    for (const sse of [early, late]) {
      const done = await sse.next((e) => e.event === "done");
      expect(done.json.message.text).toBe("Half of the answer, then the other half.");
      expect(sse.events.filter((e) => e.event === "text").map((e) => e.json.delta).join("")).toBe("Half of the answer, then the other half.");
      await sse.ended;
    }
  });
});

describe("agent-chat: bounds", () => {
  test("a run stops at RESD_AGENT_STEPS tool calls and says so; long tool answers are cut for the model", async () => {
    for (let i = 0; i < 30; i++) await s.apiJson("POST", "/api/v1/notes", { title: `Filler note number ${i} with some words`, status: "new" });
    const list = { tools: [{ name: "list_records", arguments: { resource: "notes", limit: 50 } }] };
    ai.script(list, list, list, list, { text: "never asked" });
    const from = ai.requests.length;
    const posted = await chat("editor", { operation: "post", text: "List everything, again and again" });
    const done = await until("editor", posted.body!.uuid, replied(1));
    expect(done.messages.at(-1).text).toContain("bound of 3 tool calls");
    expect(ai.requests.length - from).toBe(4);
    const cut = ai.requests[from + 1].messages.find((m) => m.role === "tool")!.content!;
    expect(cut).toContain("(cut: the answer was");
    expect(cut.length).toBeLessThan(500);
  });

  test("a conversation keeps RESD_AGENT_MESSAGES messages; runs per user per hour are bounded by RESD_AI_RATE (429)", async () => {
    ai.script({ text: "one" }, { text: "two" }, { text: "three" }, { text: "four" });
    const first = await chat("counted", { operation: "post", text: "q1" });
    const uuid = first.body!.uuid as string;
    await until("counted", uuid, replied(1));
    for (let i = 2; i <= 4; i++) {
      expect((await chat("counted", { operation: "post", uuid, text: `q${i}` })).status).toBe(200);
      await until("counted", uuid, (x) => x.messages.at(-1).text === ["", "one", "two", "three", "four"][i]);
    }
    const v = (await chat("counted", { operation: "get", uuid })).body!;
    expect(v.messages.map((m: { text: string }) => m.text)).toEqual(["q2", "two", "q3", "three", "q4", "four"]);
    // RESD_AI_RATE is 10: four runs so far, six more new conversations, then 429 with Retry-After.
    ai.script(...Array.from({ length: 6 }, () => ({ text: "ok" })));
    for (let i = 0; i < 6; i++) expect((await chat("counted", { operation: "post", text: `more ${i}` })).status).toBe(200);
    const refused = await chat("counted", { operation: "post", text: "one too many" });
    expect(refused.status).toBe(429);
    expect(refused.body!.message).toBe("TOO_MANY_REQUESTS");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    const titles = (await chat("counted", { operation: "list" })).body!.conversations.map((c: { title: string }) => c.title);
    expect(titles).not.toContain("one too many");
  });
});

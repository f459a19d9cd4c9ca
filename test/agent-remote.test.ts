/**
 * agent-remote, black-box with two real servers on loopback: the hub hands a conversation to an
 * agent whose home is the other site; the home runs it with its own user's rights and the hub polls
 * for the reply. The home never calls the hub.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { adminSite } from "./helpers/site";
import { call, tokenFor } from "./helpers/access";
import { fakeAi, type ChatRequest } from "./helpers/fake-ai";

const notes = { fields: { title: { type: "text", required: true }, status: { type: "select", options: { new: "New", done: "Done" } } } };
const librarian = { name: "Librarian", instructions: "You know the home site's notes." };

const ai = fakeAi();
let home: Awaited<ReturnType<typeof adminSite>>;
let hub: Awaited<ReturnType<typeof adminSite>>;
let homeRole = "";
let hubToken = "";
let homeToken = "";

async function roleAndUser(site: typeof home, name: string, permissions: string[]): Promise<{ role: string; token: string }> {
  const role = await site.apiJson("POST", "/api/v1/roles", { name, permissions });
  const roleId = Object.keys(role.body!.roles)[0];
  await site.apiJson("POST", "/api/v1/users", { email: `${name}@example.com`, password: `${name}-password`, role: roleId, api: true });
  return { role: roleId, token: await tokenFor(site.base, `${name}@example.com`, `${name}-password`) };
}

const hubChat = (body: Record<string, unknown>, token = hubToken) => call(hub.base, "POST", "/api/v1/agent-chat", { token, body });
async function reply(uuid: string, token = hubToken): Promise<Record<string, any>> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const v = (await hubChat({ operation: "get", uuid }, token)).body!;
    if (v.messages.some((m: { from: string }) => m.from !== "user") || v.working.some((w: { status: string }) => w.status === "failed")) return v;
    if (Date.now() > deadline) throw new Error(`no reply from the home: ${JSON.stringify(v)}`);
    await Bun.sleep(100);
  }
}
const toolNames = (r: ChatRequest) => (r.tools ?? []).map((t) => t.function.name).sort();

beforeAll(async () => {
  home = await adminSite({
    defs: { notes },
    files: { "agents/librarian.json": JSON.stringify(librarian) },
    env: { AI_API_KEY: "test-key", AI_BASE_URL: ai.base, AI_MODEL: "fake", RESD_JOB_POLL: "50", RESD_JOB_ATTEMPTS: "1" },
  });
  await home.apiJson("POST", "/api/v1/notes/h1", { title: "Home draft", status: "new" });
  await home.apiJson("POST", "/api/v1/notes/h2", { title: "Home old", status: "done" });
  const remote = await roleAndUser(home, "hubsite", ["chat-librarian", "agent-remote", "view-notes", "edit-notes"]);
  homeRole = remote.role;
  homeToken = remote.token;
  const where = new URL(home.base);
  hub = await adminSite({
    env: { RESD_AGENT_REMOTES: `librarian=http://hubsite%40example.com:hubsite-password@${where.host}`, RESD_JOB_POLL: "50" },
  });
  hubToken = (await roleAndUser(hub, "asker", ["chat-librarian", "agent-act"])).token;
});
afterAll(async () => {
  await hub?.cleanup();
  await home?.cleanup();
  ai.stop();
});

describe("agent-remote: the hub's question answered by the home's agent", () => {
  test("the hub shows the remote agent; the home's agent reads the home's records and its reply reaches the hub", async () => {
    ai.script({ tools: [{ name: "list_records", arguments: { resource: "notes" } }] }, { text: "The home has 2 notes: Home draft and Home old." });
    const from = ai.requests.length;
    const posted = await hubChat({ operation: "post", text: "@librarian which notes do you have?" });
    expect(posted.status).toBe(200);
    expect(posted.body!.team).toEqual({ librarian: "librarian" });
    const v = await reply(posted.body!.uuid);
    expect(v.messages.at(-1)).toMatchObject({ from: "librarian", text: "The home has 2 notes: Home draft and Home old." });
    expect(v.messages.at(-1).steps).toContain("listed 2 of 2 notes");
    // The home's model read the home's records, with the home user's rights.
    const asked = ai.requests.slice(from);
    expect(asked[0].messages[0].content).toContain("You know the home site's notes.");
    expect(asked[0].messages.at(-1)!.content).toBe("@librarian which notes do you have?");
    expect(JSON.stringify(asked[1].messages.at(-1))).toContain("Home draft");
    // The home user lacks agent-act: read-only there, whatever the hub allows.
    expect(toolNames(asked[0])).not.toContain("update_record");
  });

  test("without agent-act at home the agent cannot write; with it (and may_act from the hub) it can, in the home's history", async () => {
    ai.script(
      { tools: [{ name: "update_record", arguments: { resource: "notes", uuid: "h1", changes: { status: "done" } } }] },
      { text: "I could not change it." },
    );
    const first = await hubChat({ operation: "post", text: "@librarian close the note Home draft" });
    const v1 = await reply(first.body!.uuid);
    expect(v1.messages.at(-1).text).toBe("I could not change it.");
    expect((await home.apiJson("GET", "/api/v1/notes/h1")).body!.notes.h1.status).toBe("new");

    await home.apiJson("PATCH", `/api/v1/roles/${homeRole}`, { permissions: ["chat-librarian", "agent-remote", "view-notes", "edit-notes", "agent-act"] });
    ai.script(
      { tools: [{ name: "update_record", arguments: { resource: "notes", uuid: "h1", changes: { status: "done" } } }] },
      { text: "Closed." },
    );
    const second = await hubChat({ operation: "post", text: "@librarian close the note Home draft" });
    const v2 = await reply(second.body!.uuid);
    expect(v2.messages.at(-1).text).toBe("Closed.");
    expect((await home.apiJson("GET", "/api/v1/notes/h1")).body!.notes.h1.status).toBe("done");
    const history = (await home.apiJson("GET", "/api/v1/notes/h1/history")).body!.history;
    expect(history.at(-1)).toMatchObject({ action: "update", via: "librarian" });
  });

  test("may_act false (the hub's asker lacks agent-act): the home offers no write tool even to a user who holds agent-act", async () => {
    const reader = (await roleAndUser(hub, "hubreader", ["chat-librarian"])).token;
    ai.script({ text: "Only reading here." });
    const from = ai.requests.length;
    const posted = await hubChat({ operation: "post", text: "@librarian anything new?" }, reader);
    await reply(posted.body!.uuid, reader);
    expect(toolNames(ai.requests[from])).not.toContain("update_record");
    expect(toolNames(ai.requests[from])).toContain("list_records");
  });

  test("a failure at home reaches the hub as a failed run", async () => {
    ai.script({ status: 400 });
    const posted = await hubChat({ operation: "post", text: "@librarian fail please" });
    const v = await reply(posted.body!.uuid);
    expect(v.working).toMatchObject([{ agent: "librarian", status: "failed" }]);
    expect(v.working[0].error).toContain("failed at its home");
  });
});

describe("agent-remote at home: who may call it", () => {
  const ask = { operation: "ask", conversation: "c-1", owner: "someone@hub", agent: "librarian", run: "r-1", message: "hello", may_act: false, messages: [] };

  test("401 without a bearer token (a session is no way in), 403 without agent-remote, 405 for GET", async () => {
    expect((await call(home.base, "POST", "/api/v1/agent-remote", { body: ask })).status).toBe(401);
    const plain = (await roleAndUser(home, "plain", ["chat-librarian"])).token;
    const r = await call(home.base, "POST", "/api/v1/agent-remote", { token: plain, body: ask });
    expect(r.status).toBe(403);
    expect([r.body!.needs].flat()).toContain("agent-remote");
    expect((await call(home.base, "GET", "/api/v1/agent-remote", { token: homeToken })).status).toBe(405);
  });

  test("400/404/422 for bad asks; asking again with the same run starts nothing new; updates tell the reply", async () => {
    const bad = async (body: Record<string, unknown>) => (await call(home.base, "POST", "/api/v1/agent-remote", { token: homeToken, body })).status;
    expect(await bad({ ...ask, agent: "nobody" })).toBe(404);
    expect(await bad({ ...ask, run: "has spaces" })).toBe(400);
    expect(await bad({ ...ask, message: "" })).toBe(422);
    expect(await bad({ ...ask, messages: Array.from({ length: 61 }, () => ({ from: "user", text: "x" })) })).toBe(400);
    expect(await bad({ operation: "shout" })).toBe(400);
    expect(await bad({ operation: "updates", since: -1 })).toBe(400);

    ai.script({ text: "Hello from home." });
    const from = ai.requests.length;
    const first = await call(home.base, "POST", "/api/v1/agent-remote", { token: homeToken, body: ask });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ ok: true });
    const again = await call(home.base, "POST", "/api/v1/agent-remote", { token: homeToken, body: ask });
    expect(again.status).toBe(200);
    expect(again.body!.now).toBe(first.body!.now);
    let updates: { type: string; agent: string; run: string; text: string }[] = [];
    const deadline = Date.now() + 10_000;
    while (!updates.some((u) => u.type === "reply") && Date.now() < deadline) {
      await Bun.sleep(100);
      updates = (await call(home.base, "POST", "/api/v1/agent-remote", { token: homeToken, body: { operation: "updates", since: first.body!.now - 1 } })).body!.updates;
    }
    expect(updates.filter((u) => u.run === "r-1")).toEqual([{ type: "reply", agent: "librarian", run: "r-1", text: "Hello from home." }]);
    expect(ai.requests.length - from).toBe(1);
    const later = await call(home.base, "POST", "/api/v1/agent-remote", { token: homeToken, body: { operation: "updates", since: Date.now() + 1000 } });
    expect(later.body!.updates).toEqual([]);
  });
});

/**
 * An agent's run survives a crash of the server: it is a job of the durable queue, so the next
 * server takes it up again; the steps the cut-off attempt made are stored, and the new attempt is
 * told of them instead of making them twice. Black-box: the real server, killed with SIGKILL.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { adminSite, cli, serve, type Server } from "./helpers/site";
import { call, tokenFor } from "./helpers/access";
import { fakeAi, type ChatRequest } from "./helpers/fake-ai";

const notes = { fields: { title: { type: "text", required: true }, status: { type: "select", options: { new: "New", done: "Done" } } } };
const ENV = { AI_API_KEY: "test-key", AI_MODEL: "fake", RESD_JOB_POLL: "50", RESD_JOB_LEASE: "2", RESD_JOB_BACKOFF: "100", RESD_JOB_ATTEMPTS: "3" };

const ai = fakeAi();
let s: Awaited<ReturnType<typeof adminSite>>;
let again: Server | null = null;

beforeAll(async () => {
  s = await adminSite({ defs: { notes }, env: { ...ENV, AI_BASE_URL: ai.base } });
  await s.apiJson("POST", "/api/v1/notes/n1", { title: "Draft", status: "new" });
  await s.apiJson("POST", "/api/v1/roles", { name: "editors", permissions: ["chat-resd", "agent-act", "view-notes", "edit-notes"] });
});
afterAll(async () => {
  await again?.stop();
  rmSync(s.dir, { recursive: true, force: true });
  ai.stop();
});

test("a crash mid-run: the next server resumes the run, told what the cut-off attempt did; nothing is written twice", async () => {
  const chat = (base: string, body: Record<string, unknown>) => call(base, "POST", "/api/v1/agent-chat", { token: s.token, body });
  ai.script(
    { tools: [{ name: "update_record", arguments: { resource: "notes", uuid: "n1", changes: { status: "done" } } }] },
    // The provider is in the middle of its answer when the server dies.
    { text: "Closing the note now and then some more words", pause: new Promise(() => {}) },
  );
  const posted = await chat(s.base, { operation: "post", text: "Close the note Draft" });
  expect(posted.status).toBe(200);
  const uuid = posted.body!.uuid as string;
  const deadline = Date.now() + 10_000;
  for (;;) {
    const v = (await chat(s.base, { operation: "get", uuid })).body!;
    if (v.working[0]?.steps?.includes("updated notes/n1") && ai.requests.length >= 2) break;
    if (Date.now() > deadline) throw new Error(`the run did not get to its step: ${JSON.stringify(v)}`);
    await Bun.sleep(50);
  }
  s.proc.kill("SIGKILL");
  await s.proc.exited;

  let resumed: ChatRequest | null = null;
  ai.script((r) => {
    resumed = r;
    return { text: "The note Draft is closed." };
  });
  again = await serve(s.dir, { env: { ...ENV, AI_BASE_URL: ai.base } });
  let v: Record<string, any> = {};
  const until = Date.now() + 15_000;
  while (Date.now() < until) {
    v = (await chat(again.base, { operation: "get", uuid })).body!;
    if (v.messages.length > 1) break;
    await Bun.sleep(100);
  }
  expect(v.messages.at(-1)).toMatchObject({ from: "resd", text: "The note Draft is closed.", link: "/admin/notes/n1" });
  expect(v.messages.at(-1).steps).toEqual(["updated notes/n1"]);
  expect(v.working).toEqual([]);
  // The new attempt was told of the write the cut-off one made.
  expect(resumed!.messages[0].content).toContain("cut off");
  expect(resumed!.messages[0].content).toContain("update_record");
  const history = (await call(again.base, "GET", "/api/v1/notes/n1/history", { token: s.token })).body!.history;
  expect(history.filter((h: { action: string }) => h.action === "update")).toHaveLength(1);
  expect((await call(again.base, "GET", "/api/v1/notes/n1", { token: s.token })).body!.notes.n1.status).toBe("done");
});

test("a run whose every attempt fails ends failed in the chat and as a dead job (resd jobs)", async () => {
  const token = await tokenFor(again!.base, s.email, "admin-password");
  ai.script({ status: 400 }, { status: 400 }, { status: 400 });
  const posted = await call(again!.base, "POST", "/api/v1/agent-chat", { token, body: { operation: "post", text: "This will fail" } });
  const uuid = posted.body!.uuid as string;
  let v: Record<string, any> = {};
  const until = Date.now() + 20_000;
  while (Date.now() < until) {
    v = (await call(again!.base, "POST", "/api/v1/agent-chat", { token, body: { operation: "get", uuid } })).body!;
    if (v.working[0]?.status === "failed") break;
    await Bun.sleep(100);
  }
  expect(v.working).toMatchObject([{ agent: "resd", status: "failed" }]);
  expect(v.working[0].error).toContain("HTTP 400");
  const jobs = await cli(s.dir, ["jobs", "list", "--state", "dead", "--json"]);
  expect(jobs.code).toBe(0);
  expect(jobs.stdout).toContain("agent-run");
});

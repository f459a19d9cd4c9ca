/**
 * One agent run (core/agents/run.ts) against a scripted chat-completions server on loopback: the
 * tools it is offered, tool calls run as the asker (writes only with agent-act), the text streamed,
 * the bound of steps. The site is opened in process, as the job worker opens it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { loadConfig } from "../src/core/config";
import { openSite } from "../src/core/open-site";
import type { Site } from "../src/core/site";
import { findUserByEmail, principalForUser } from "../src/core/access/users";
import type { Principal } from "../src/core/access/permissions";
import { runAgent, type Agent, type Step } from "../src/core/agents/run";
import { cli, makeSite, siteEnv } from "./helpers/site";
import { fakeAi } from "./helpers/fake-ai";

const notes = { fields: { title: { type: "text", required: true }, status: { type: "select", options: { new: "New", done: "Done" } } } };
const tasks = { fields: { title: { type: "text" } } };
const ai = fakeAi();
const agent: Agent = { id: "helper", name: "Helper", description: "helps", instructions: "You help editors." };
const bounds = { maxSteps: 4, toolAnswerChars: 2000 };

let dir = "";
let site: Site;
let actor: Principal;
let reader: Principal;

async function principal(email: string, role: string): Promise<Principal> {
  const r = await cli(dir, ["user", "add", email, "--password", "a-long-password", "--role", role, "--api"]);
  if (r.code !== 0) throw new Error(r.stderr);
  return principalForUser(site, (await findUserByEmail(site, email))!);
}

beforeAll(async () => {
  dir = makeSite({ defs: { notes, tasks } });
  for (const [name, ...perms] of [["acting", "view-notes", "edit-notes", "agent-act"], ["reading", "view-notes", "edit-notes"]]) {
    const r = await cli(dir, ["role", "add", name, ...perms]);
    if (r.code !== 0) throw new Error(r.stderr);
  }
  site = await openSite(loadConfig({ dir, env: { ...siteEnv(dir), AI_API_KEY: "test-key", AI_BASE_URL: ai.base, AI_MODEL: "fake-model" } }));
  actor = await principal("actor@example.com", "acting");
  reader = await principal("reader@example.com", "reading");
});
afterAll(async () => {
  await site.close();
  ai.stop();
  rmSync(dir, { recursive: true, force: true });
});

const toolNames = (i: number) => (ai.requests[i].tools ?? []).map((t) => t.function.name).sort();
async function note(title: string): Promise<string> {
  const { createRecord } = await import("../src/core/records/service");
  const { SYSTEM } = await import("../src/core/access/permissions");
  return (await createRecord(site, SYSTEM, "notes", { title, status: "new" })).row.uuid;
}

describe("runAgent", () => {
  test("with agent-act: lists, then updates a record as the asker, and streams its answer", async () => {
    const uuid = await note("Draft");
    ai.requests.length = 0;
    ai.script(
      { tools: [{ name: "list_records", arguments: { resource: "notes", filter: "status:new" } }] },
      { tools: [{ name: "update_record", arguments: { resource: "notes", uuid, changes: { status: "done" } } }] },
      { text: "I marked the note Draft as done." },
    );
    let streamed = "";
    const steps: Step[] = [];
    const r = await runAgent(site, agent, actor, [{ role: "user", content: "Mark the new notes as done" }], bounds, { text: (d) => (streamed += d), step: (s) => void steps.push(s) });
    expect(r.text).toBe("I marked the note Draft as done.");
    expect(streamed).toBe(r.text);
    expect(r.steps.map((s) => s.summary)).toEqual([expect.stringMatching(/^listed \d+ of \d+ notes$/), `updated notes/${uuid}`]);
    expect(steps).toEqual(r.steps);
    const row = await site.store.get("notes", uuid);
    expect(JSON.parse(row!.data).status).toBe("done");
    expect(row!._modified_by).toBe(actor.uuid);
    // The model was offered every tool, and got each tool's answer back.
    expect(toolNames(0)).toContain("update_record");
    expect(ai.requests[0].messages[0].role).toBe("system");
    expect(ai.requests[0].messages[0].content).toContain("You help editors.");
    const toolMessage = ai.requests[1].messages.at(-1)!;
    expect(toolMessage.role).toBe("tool");
    expect(toolMessage.content).toContain(uuid);
    expect(ai.requests[0].model).toBe("fake-model");
    expect(ai.requests[0].stream).toBe(true);
  });

  test("without agent-act: no write tool is offered, a write the model tries anyway is refused and the model is told", async () => {
    const uuid = await note("Keep me");
    ai.requests.length = 0;
    ai.script(
      { tools: [{ name: "update_record", arguments: { resource: "notes", uuid, changes: { title: "Changed" } } }] },
      { text: "I may not change records for you." },
    );
    const r = await runAgent(site, agent, reader, [{ role: "user", content: "Rename it" }], bounds);
    expect(toolNames(0)).toEqual(["find_files", "find_pages", "list_records", "list_resources", "read_record", "translate"]);
    expect(r.steps[0]).toMatchObject({ tool: "update_record", ok: false });
    expect(ai.requests[1].messages.at(-1)!.content).toContain("ACCESS_DENIED");
    expect(ai.requests[1].messages.at(-1)!.content).toContain("agent-act");
    expect(JSON.parse((await site.store.get("notes", uuid))!.data).title).toBe("Keep me");
    expect(ai.requests[0].messages[0].content).toContain("only read");
  });

  test("a resource the asker may not view answers the API's 403, which the model reads", async () => {
    ai.requests.length = 0;
    ai.script({ tools: [{ name: "list_records", arguments: { resource: "tasks" } }] }, { text: "You cannot see tasks." });
    const r = await runAgent(site, agent, actor, [{ role: "user", content: "List tasks" }], bounds);
    expect(r.steps[0]).toMatchObject({ tool: "list_records", ok: false, resource: "tasks" });
    const told = JSON.parse(ai.requests[1].messages.at(-1)!.content as string);
    expect(told.error).toMatchObject({ status: 403, message: "ACCESS_DENIED" });
    expect(told.error.needs).toContain("view-tasks");
  });

  test("an agent limited to some resources cannot touch others, even where the asker could", async () => {
    const uuid = await note("Limited");
    ai.script({ tools: [{ name: "update_record", arguments: { resource: "notes", uuid, changes: { status: "done" } } }] }, { text: "No." });
    const r = await runAgent(site, { ...agent, resources: ["tasks"] }, actor, [{ role: "user", content: "x" }], bounds);
    expect(r.steps[0].ok).toBe(false);
    expect(JSON.parse((await site.store.get("notes", uuid))!.data).status).toBe("new");
  });

  test("broken arguments are the model's error, not the run's; a run stops at its bound of steps", async () => {
    ai.script({ tools: [{ name: "read_record", arguments: "{not json" }] }, { text: "Sorry." });
    const r = await runAgent(site, agent, actor, [{ role: "user", content: "x" }], bounds);
    expect(r.steps[0]).toMatchObject({ ok: false });
    expect(r.text).toBe("Sorry.");
    const loop = { tools: [{ name: "list_records", arguments: { resource: "notes" } }] };
    ai.script(loop, loop, loop, loop, loop, { text: "never reached" });
    const bounded = await runAgent(site, agent, actor, [{ role: "user", content: "loop" }], bounds);
    expect(bounded.stopped).toBe(true);
    expect(bounded.steps.length).toBe(bounds.maxSteps);
    expect(bounded.text).toContain("bound of 4 tool calls");
  });

  test("a provider failure is a 502 naming only its status", async () => {
    ai.script({ status: 500 }, { status: 500 }, { status: 500 });
    await expect(runAgent(site, agent, actor, [{ role: "user", content: "x" }], bounds)).rejects.toMatchObject({ status: 502, details: "the AI provider answered HTTP 500" });
  });
});

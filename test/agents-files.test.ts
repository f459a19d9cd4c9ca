/**
 * Agent files DIR/agents/<id>.json: valid ones are offered, an invalid one is left out and reported
 * in `.system-messages` (with its file and what is wrong) while the others keep working; the default
 * agent `resd` exists when an AI provider is configured.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadConfig } from "../src/core/config";
import { openSite } from "../src/core/open-site";
import type { Site } from "../src/core/site";
import { loadAgents } from "../src/core/agents/definitions";
import { adminSite, makeSite, siteEnv } from "./helpers/site";

const notes = { fields: { title: { type: "text" } } };
const files: Record<string, string> = {
  "agents/editor.json": JSON.stringify({ name: "Editor", description: "edits notes", instructions: "You edit notes.", model: "small", tools: ["list_records", "update_record"], resources: ["notes"] }),
  "agents/reader.json": JSON.stringify({ name: "Reader", instructions: "You read." }),
  "agents/broken.json": "{ not json",
  "agents/no-instructions.json": JSON.stringify({ name: "Nothing to do" }),
  "agents/bad-tool.json": JSON.stringify({ name: "X", instructions: "x", tools: ["drop_everything"] }),
  "agents/bad-resource.json": JSON.stringify({ name: "X", instructions: "x", resources: ["nope"] }),
  "agents/extra-key.json": JSON.stringify({ name: "X", instructions: "x", temperature: 2 }),
  "agents/Upper.json": JSON.stringify({ name: "X", instructions: "x" }),
  "agents/notes.txt": "not an agent file: ignored",
  "agents/mcp.json": JSON.stringify({ name: "X", instructions: "x" }),
};

describe("agent files", () => {
  let dir = "";
  let site: Site;
  beforeAll(async () => {
    dir = makeSite({ defs: { notes }, files });
  });
  afterAll(async () => {
    await site?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("valid files are agents; each invalid one is reported with its file and the reason; without a provider no default agent", async () => {
    site = await openSite(loadConfig({ dir, env: { ...siteEnv(dir), AI_API_KEY: "" } }));
    const { agents, problems } = loadAgents(site);
    expect([...agents.keys()].sort()).toEqual(["editor", "reader"]);
    expect(agents.get("editor")).toEqual({ id: "editor", name: "Editor", description: "edits notes", instructions: "You edit notes.", model: "small", tools: ["list_records", "update_record"], resources: ["notes"] });
    expect(agents.get("reader")).toEqual({ id: "reader", name: "Reader", description: "", instructions: "You read." });
    const by = Object.fromEntries(problems.map((p) => [p.file, p.message]));
    expect(Object.keys(by).sort()).toEqual(["agents/Upper.json", "agents/bad-resource.json", "agents/bad-tool.json", "agents/broken.json", "agents/extra-key.json", "agents/mcp.json", "agents/no-instructions.json"]);
    expect(by["agents/broken.json"]).toStartWith("not valid JSON");
    expect(by["agents/no-instructions.json"]).toContain("`instructions` must be a non-empty string");
    expect(by["agents/bad-tool.json"]).toContain('"drop_everything"');
    expect(by["agents/bad-resource.json"]).toContain('"nope"');
    expect(by["agents/extra-key.json"]).toContain('"temperature"');
    expect(by["agents/Upper.json"]).toContain("lowercase");
    expect(by["agents/mcp.json"]).toContain("reserved");
  });

  test("with a provider the default agent resd exists; a file agents/resd.json replaces it", async () => {
    await site.close();
    site = await openSite(loadConfig({ dir, env: { ...siteEnv(dir), AI_API_KEY: "k" } }));
    expect(loadAgents(site).agents.get("resd")?.name).toBe("resd");
    writeFileSync(join(dir, "agents/resd.json"), JSON.stringify({ name: "Our assistant", instructions: "Be brief." }));
    expect(loadAgents(site).agents.get("resd")).toMatchObject({ name: "Our assistant", instructions: "Be brief." });
  });
});

describe("GET /api/v1/.system-messages", () => {
  let s: Awaited<ReturnType<typeof adminSite>>;
  beforeAll(async () => {
    s = await adminSite({ defs: { notes }, files: { "agents/ok.json": files["agents/reader.json"], "agents/broken.json": files["agents/broken.json"] } });
  });
  afterAll(async () => {
    await s.cleanup();
  });

  test("names an invalid agent file and why, for administrators", async () => {
    const r = await s.apiJson("GET", "/api/v1/.system-messages");
    expect(r.status).toBe(200);
    const agents = (r.body!.messages as { topic: string; level: string; text: string }[]).filter((m) => m.topic === "agents");
    expect(agents).toHaveLength(1);
    expect(agents[0].level).toBe("error");
    expect(agents[0].text).toContain("agents/broken.json");
    expect(agents[0].text).toContain("not valid JSON");
    // And in the server's log, when it started.
    expect(s.output()).toMatch(/agent not offered.*agents\/broken\.json/);
  });
});

/**
 * Agents are files `DIR/agents/<id>.json`: `name`, `description`, `instructions` (the system
 * prompt), optional `model`, the `tools` it may use and the `resources` it may touch. A site with an
 * AI provider also has the default agent `resd` (a file of that name replaces it). A file that is
 * not a valid agent is left out and reported (the server log, `.system-messages`); the others work.
 * The folder is read when asked: a few small files, so an edit counts at once.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Site } from "../site";
import type { Agent } from "./run";
import { TOOLS } from "./tools";

export type AgentProblem = { file: string; message: string };
export type Agents = { agents: Map<string, Agent>; problems: AgentProblem[] };

/** The id is the file's name: what `@id` mentions and `chat-<id>` permissions name. */
export const AGENT_ID = /^[a-z0-9][a-z0-9_-]{0,62}$/;
export const DEFAULT_AGENT = "resd";
/** History's `via` for changes made over /api/v1/mcp: no agent file may take it. */
const RESERVED_IDS = new Set(["mcp"]);
const KEYS = new Set(["name", "description", "instructions", "model", "tools", "resources"]);
const LIMITS = { name: 100, description: 500, instructions: 20_000, model: 200 } as const;

const DEFAULT: Agent = {
  id: DEFAULT_AGENT,
  name: "resd",
  description: "The site's assistant: finds, reads and (with agent-act) changes records for you.",
  instructions: "You are the assistant of a website's content service. You find, read and change records with your tools, for the person who asks and with their rights. Answer briefly; name the records you changed.",
};

function text(raw: Record<string, unknown>, key: keyof typeof LIMITS, required: boolean): string | undefined {
  const v = raw[key];
  if (v === undefined && !required) return undefined;
  if (typeof v !== "string" || (required && !v.trim())) throw new Error(`\`${key}\` must be ${required ? "a non-empty" : "a"} string`);
  if (v.length > LIMITS[key]) throw new Error(`\`${key}\` may hold at most ${LIMITS[key]} characters`);
  return v;
}

function names(raw: Record<string, unknown>, key: "tools" | "resources", known: (n: string) => boolean, what: string): string[] | undefined {
  const v = raw[key];
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || !v.every((x) => typeof x === "string")) throw new Error(`\`${key}\` must be a list of names`);
  const unknown = v.filter((n) => !known(n));
  if (unknown.length) throw new Error(`\`${key}\` names ${unknown.map((n) => `"${n}"`).join(", ")}, which ${unknown.length > 1 ? "are" : "is"} not ${what}`);
  return [...new Set(v as string[])];
}

/** One agent file, checked; throws an Error whose message says what is wrong. */
export function parseAgent(site: Site, id: string, source: string): Agent {
  if (!AGENT_ID.test(id)) throw new Error("the file name must be the agent's id: lowercase letters, digits, - and _ (at most 63), then .json");
  if (RESERVED_IDS.has(id)) throw new Error(`the id ${id} is reserved (history names changes made over MCP so)`);
  let raw: unknown;
  try {
    raw = JSON.parse(source);
  } catch (e) {
    throw new Error(`not valid JSON: ${(e as Error).message}`);
  }
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) throw new Error("an agent is a JSON object");
  const o = raw as Record<string, unknown>;
  const extra = Object.keys(o).filter((k) => !KEYS.has(k));
  if (extra.length) throw new Error(`unknown key${extra.length > 1 ? "s" : ""} ${extra.map((k) => `"${k}"`).join(", ")} (an agent has ${[...KEYS].join(", ")})`);
  const agent: Agent = {
    id,
    name: text(o, "name", true)!,
    description: text(o, "description", false) ?? "",
    instructions: text(o, "instructions", true)!,
  };
  const model = text(o, "model", false);
  if (model) agent.model = model;
  const tools = names(o, "tools", (n) => TOOLS.some((t) => t.name === n), "a tool");
  if (tools) agent.tools = tools;
  const resources = names(o, "resources", (n) => site.served(n) !== null, "a resource of this site");
  if (resources) agent.resources = resources;
  return agent;
}

export function loadAgents(site: Site): Agents {
  const agents = new Map<string, Agent>();
  const problems: AgentProblem[] = [];
  if (site.config.aiApiKey) agents.set(DEFAULT_AGENT, DEFAULT);
  const folder = join(site.config.dir, "agents");
  if (!existsSync(folder)) return { agents, problems };
  for (const entry of readdirSync(folder, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    if (!entry.isFile() || !entry.name.endsWith(".json")) continue;
    const file = `agents/${entry.name}`;
    try {
      const agent = parseAgent(site, entry.name.slice(0, -".json".length), readFileSync(join(folder, entry.name), "utf8"));
      agents.set(agent.id, agent);
    } catch (e) {
      problems.push({ file, message: (e as Error).message });
    }
  }
  return { agents, problems };
}

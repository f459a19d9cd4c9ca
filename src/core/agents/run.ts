/**
 * One run of an agent: the conversation so far goes to the provider with the tools the asker may
 * use; the reply streams back (text as it comes), each tool call runs as the asker and its answer
 * goes back to the model, until the model answers with text or the run reaches its bound of steps.
 */
import type OpenAI from "openai";
import type { Principal } from "../access/permissions";
import { clientFor, providerFailure } from "../ai/provider";
import type { Site } from "../site";
import { callTool, TOOLS, toolsFor, type Tool, type ToolAnswer } from "./tools";

export type Agent = {
  id: string;
  name: string;
  description: string;
  /** Its system prompt. */
  instructions: string;
  model?: string;
  /** The tools it may use (all when absent), within what the asker may. */
  tools?: string[];
  /** The resources it may touch (all the asker may when absent). */
  resources?: string[];
};

export type ChatMessage = { role: "user" | "assistant"; content: string };
/** One tool call of a run, as the chat shows it. */
/** `at`: when it ran (ms since the epoch). */
export type Step = { tool: string; arguments: Record<string, unknown>; ok: boolean; summary: string; resource?: string; uuid?: string; at?: number };
/**
 * `readOnly`: no write tools, whatever the asker holds (another site asked without may_act).
 * `interrupted`: tool calls an earlier attempt of this run made before it was cut off (a restart):
 * the model is told, so that it does not make them twice.
 */
export type RunBounds = { maxSteps: number; toolAnswerChars: number; readOnly?: boolean; interrupted?: Step[] };
export type RunEvents = { text?(delta: string): void; step?(step: Step): void | Promise<void> };
export type RunResult = { text: string; steps: Step[]; stopped: boolean };

type Call = { id: string; name: string; arguments: string };

/** The tools of this agent for this asker: the asker's (writes only with agent-act), narrowed by the agent's list. */
export function agentTools(agent: Agent, asker: Principal, readOnly = false): Tool[] {
  return toolsFor(asker).filter((t) => (!agent.tools || agent.tools.includes(t.name)) && !(readOnly && t.writes));
}

function systemPrompt(site: Site, agent: Agent, asker: Principal, tools: Tool[], interrupted: Step[]): string {
  const writes = tools.some((t) => t.writes);
  return [
    agent.instructions,
    `You work on the site ${site.config.publicUrl || "of this resd server"} for ${asker.email ?? "a user"}, with their rights: a tool that answers an error was refused, say so rather than retry it the same way.`,
    writes ? "You may change records with the write tools; say what you changed." : "You may only read: you cannot change records for this user (they lack agent-act).",
    agent.resources ? `You may touch only these resources: ${agent.resources.join(", ")}.` : "",
    interrupted.length ? `An earlier attempt at this answer was cut off (the server restarted) after these tool calls, whose effects stand; do not repeat the writes among them:\n${interrupted.map((s) => `- ${s.tool} ${JSON.stringify(s.arguments)}: ${s.summary}`).join("\n")}` : "",
  ].filter(Boolean).join("\n\n");
}

/**
 * A call of a tool this run does not offer, refused: the agent's file leaves it out, or the run may
 * only read. Null where the tool itself answers (unknown tools; a write without agent-act, which
 * names the permission).
 */
function notOffered(agent: Agent, tools: Tool[], name: string, bounds: RunBounds): ToolAnswer | null {
  const tool = TOOLS.find((t) => t.name === name);
  if (!tool || tools.includes(tool)) return null;
  if (agent.tools && !agent.tools.includes(name)) return { ok: false, error: { status: 403, message: "ACCESS_DENIED", details: `agent ${agent.id} may not use ${name}` } };
  if (tool.writes && bounds.readOnly) return { ok: false, error: { status: 403, message: "ACCESS_DENIED", details: "this run may only read: the site that asked did not allow writes" } };
  return null;
}

/** A tool's answer as the model gets it: JSON, cut to the bound. */
function forModel(answer: ToolAnswer, max: number): string {
  const text = JSON.stringify(answer.ok ? answer.result : { error: answer.error });
  return text.length <= max ? text : `${text.slice(0, max)}… (cut: the answer was ${text.length} characters; ask for less, e.g. a smaller limit)`;
}

function summary(tool: string, args: Record<string, unknown>, answer: ToolAnswer): string {
  const where = [args.resource, args.uuid].filter((x) => typeof x === "string").join("/");
  if (!answer.ok) return `${tool} ${where}: refused (${answer.error.status} ${answer.error.message})`;
  const r = answer.result as Record<string, unknown>;
  if (tool === "list_records") return `listed ${r.count} of ${r.total ?? "?"} ${where}`;
  const verb: Record<string, string> = { read_record: "read", create_record: "created", update_record: "updated", delete_record: "deleted", restore_record: "restored" };
  return `${verb[tool] ?? tool} ${where}`.trim();
}

/** Reads a streamed answer: its text (told as it comes) and its tool calls, put together from their pieces. */
async function readStream(stream: AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>, events: RunEvents): Promise<{ text: string; calls: Call[] }> {
  let text = "";
  const calls: Call[] = [];
  for await (const chunk of stream) {
    const delta = chunk.choices?.[0]?.delta;
    if (!delta) continue;
    if (delta.content) {
      text += delta.content;
      events.text?.(delta.content);
    }
    for (const tc of delta.tool_calls ?? []) {
      const call = (calls[tc.index] ??= { id: "", name: "", arguments: "" });
      if (tc.id) call.id = tc.id;
      if (tc.function?.name) call.name += tc.function.name;
      if (tc.function?.arguments) call.arguments += tc.function.arguments;
    }
  }
  return { text, calls: calls.filter(Boolean) };
}

export async function runAgent(site: Site, agent: Agent, asker: Principal, conversation: ChatMessage[], bounds: RunBounds, events: RunEvents = {}): Promise<RunResult> {
  const tools = agentTools(agent, asker, bounds.readOnly);
  const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [
    { role: "system", content: systemPrompt(site, agent, asker, tools, bounds.interrupted ?? []) },
    ...conversation.map((m) => ({ role: m.role, content: m.content })),
  ];
  const offered = tools.map((t) => ({ type: "function" as const, function: { name: t.name, description: t.description, parameters: t.parameters } }));
  const steps: Step[] = [];
  for (;;) {
    let answer: { text: string; calls: Call[] };
    try {
      const stream = await clientFor(site.config).chat.completions.create({
        model: agent.model ?? site.config.aiModel, messages, stream: true, ...(offered.length ? { tools: offered } : {}),
      });
      answer = await readStream(stream, events);
    } catch (e) {
      throw providerFailure(e);
    }
    if (!answer.calls.length) return { text: answer.text, steps, stopped: false };
    if (steps.length + answer.calls.length > bounds.maxSteps) {
      return { text: `${answer.text}${answer.text ? "\n\n" : ""}(Stopped: this run reached its bound of ${bounds.maxSteps} tool calls.)`, steps, stopped: true };
    }
    messages.push({ role: "assistant", content: answer.text || null, tool_calls: answer.calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } })) });
    for (const call of answer.calls) {
      let args: Record<string, unknown> = {};
      let result: ToolAnswer;
      try {
        const parsed: unknown = call.arguments.trim() ? JSON.parse(call.arguments) : {};
        if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new SyntaxError("not an object");
        args = parsed as Record<string, unknown>;
        result = agent.resources && typeof args.resource === "string" && !agent.resources.includes(args.resource)
          ? { ok: false, error: { status: 403, message: "ACCESS_DENIED", details: `agent ${agent.id} may touch only ${agent.resources.join(", ")}` } }
          : notOffered(agent, tools, call.name, bounds) ?? await callTool({ site, p: asker }, call.name, args);
      } catch (e) {
        if (!(e instanceof SyntaxError)) throw e;
        result = { ok: false, error: { status: 400, message: "INVALID_DATA", details: "the arguments are not a JSON object" } };
      }
      const step: Step = { tool: call.name, arguments: args, ok: result.ok, summary: summary(call.name, args, result), at: Date.now() };
      if (typeof args.resource === "string") step.resource = args.resource;
      const uuid = result.ok && result.result && typeof (result.result as { uuid?: unknown }).uuid === "string" ? (result.result as { uuid: string }).uuid : args.uuid;
      if (typeof uuid === "string") step.uuid = uuid;
      steps.push(step);
      await events.step?.(step);
      messages.push({ role: "tool", tool_call_id: call.id, content: forModel(result, bounds.toolAnswerChars) });
    }
  }
}

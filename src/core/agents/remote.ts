/**
 * agent-remote: a site (the hub) hands a conversation to an agent whose home is another site.
 *
 * - At home (`ask`, `updates`): a user with `agent-remote` asks on behalf of someone of the hub;
 *   the run is a local run of the home's agent with that home user's rights (writes only when the
 *   hub says `may_act` and the home user holds `agent-act`). `updates` tells what runs of that
 *   user did since a time. The home never calls the hub.
 * - At the hub (`askRemote`): a run of a remote agent asks the home, then polls its updates until
 *   the reply, a failure or the run's bound.
 */
import { hasPermission, requirePermission, type Principal } from "../access/permissions";
import { takeAiCall } from "../access/rate-limit";
import { AppError, badRequest, denied } from "../errors";
import type { Site } from "../site";
import type { StoreTx } from "../store/types";
import { addMessage, changeConversation, conversationsOf, newConversation, runOf, type Conversation, type Message, type Run } from "./conversations";
import { AGENT_ID } from "./definitions";
import { checkText, queueRun, timedOut } from "./chat";
import { chatPermission, roster, type Home, type RosterAgent } from "./roster";
import type { RunEvents, RunResult, Step } from "./run";
import { mayAct } from "./tools";

export const AGENT_REMOTE = "agent-remote";
/** Earlier messages an ask may carry. */
export const MAX_EARLIER = 60;
const RUN_ID = /^[A-Za-z0-9-]{1,64}$/;
const POLL_MS = 1000;
const CALL_TIMEOUT_MS = 30_000;

export type Update = { type: "reply" | "failed" | "notice"; agent: string; run: string; text: string };

// ---- at home ----

function homeAgent(site: Site, p: Principal, id: unknown): RosterAgent {
  if (typeof id !== "string" || !AGENT_ID.test(id)) throw badRequest("`agent` must be an agent's id");
  const agent = roster(site).get(id);
  if (!agent || agent.home) throw new AppError(404, "RESOURCE_NOT_FOUND", `this site has no agent ${id} of its own`);
  if (!hasPermission(p, chatPermission(id))) throw denied([chatPermission(id)], `asking @${id} needs chat-${id}`);
  return agent;
}

function earlier(raw: unknown): Omit<Message, "id" | "at">[] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw) || raw.length > MAX_EARLIER) throw badRequest(`\`messages\` must be a list of at most ${MAX_EARLIER} earlier messages`);
  return raw.map((m, i) => {
    const o = m as { from?: unknown; text?: unknown };
    if (!o || typeof o !== "object" || typeof o.from !== "string" || typeof o.text !== "string" || o.from.length > 64 || o.text.length > 8000) {
      throw badRequest(`messages[${i}] must be {from, text} (text at most 8,000 characters)`);
    }
    return { from: o.from === "user" ? "user" : o.from, text: o.text };
  });
}

/** `ask`: starts the run at home (once per run id: asking again answers the same). */
export async function remoteAsk(site: Site, p: Principal, body: Record<string, unknown>): Promise<{ ok: true; now: number }> {
  requirePermission(p, AGENT_REMOTE);
  const agent = homeAgent(site, p, body.agent);
  for (const key of ["conversation", "run"] as const) {
    if (typeof body[key] !== "string" || !RUN_ID.test(body[key] as string)) throw badRequest(`\`${key}\` must be an id (letters, digits, -; at most 64)`);
  }
  if (typeof body.owner !== "string" || body.owner.length > 200) throw badRequest("`owner` must name who asks at the hub (at most 200 characters)");
  if (body.may_act !== undefined && typeof body.may_act !== "boolean") throw badRequest("`may_act` must be true or false");
  const text = checkText(body.message);
  const history = earlier(body.messages);
  const hubConversation = body.conversation as string;
  const run = body.run as string;
  const mine = (await conversationsOf(site, p.uuid!)).find((c) => c.remote?.conversation === hubConversation);
  // A new run spends the home's provider credits: it counts against the home user's AI rate.
  if (!mine || !runOf(mine, run)) await takeAiCall(site, p);
  const start = async (c: Conversation, tx: StoreTx) => {
    const known = runOf(c, run);
    if (known) return known.started;
    if (c.runs.some((r) => r.agent === agent.id && (r.status === "queued" || r.status === "working") && !timedOut(site, r))) {
      throw new AppError(409, "CONFLICT", `@${agent.id} is still answering in this conversation`);
    }
    c.messages = [];
    for (const m of history) addMessage(c, m);
    addMessage(c, { from: "user", text });
    const r = await queueRun(site, tx, c, agent.id, { id: run, mayAct: body.may_act === true });
    return r.started;
  };
  if (mine) {
    const done = await changeConversation(site, mine.uuid, start);
    if (done) return { ok: true, now: done.result };
  }
  const made = await newConversation(site, p.uuid!, { title: `${(body.owner as string).slice(0, 60)} (asked from another site)`, remote: { hub: "", conversation: hubConversation, owner: body.owner as string } }, start);
  return { ok: true, now: made.result };
}

/** `updates`: what the runs asked by this home user did since `since` (ms, the home's clock). */
export async function remoteUpdates(site: Site, p: Principal, body: Record<string, unknown>): Promise<{ updates: Update[]; now: number }> {
  requirePermission(p, AGENT_REMOTE);
  const since = body.since ?? 0;
  if (typeof since !== "number" || !Number.isFinite(since) || since < 0) throw badRequest("`since` must be a time in milliseconds (the `now` of the last answer)");
  const now = Date.now();
  const updates: Update[] = [];
  for (const c of await conversationsOf(site, p.uuid!)) {
    if (!c.remote || c.modified * 1000 < since - 1000) continue;
    for (const r of c.runs) updates.push(...updatesOf(site, c, r, since, now));
  }
  return { updates, now };
}

function updatesOf(site: Site, c: Conversation, r: Run, since: number, now: number): Update[] {
  const out: Update[] = r.steps.filter((s) => (s.at ?? 0) > since && (s.at ?? 0) <= now).map((s) => ({ type: "notice", agent: r.agent, run: r.id, text: s.summary }));
  if (r.updated <= since) return out;
  if (r.status === "done") {
    const reply = c.messages.findLast((m) => m.run === r.id);
    out.push({ type: "reply", agent: r.agent, run: r.id, text: reply?.text ?? "" });
  } else if (r.status === "failed" || timedOut(site, r, now)) {
    out.push({ type: "failed", agent: r.agent, run: r.id, text: r.error ?? `no answer within ${site.config.agentRunTimeout} s` });
  }
  return out;
}

// ---- at the hub ----

const tokens = new Map<string, { token: string; expires: number }>();

async function callHome(home: Home, path: string, body: unknown, token?: string): Promise<{ status: number; body: Record<string, unknown> }> {
  let res: Response;
  try {
    res = await fetch(`${home.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
    });
  } catch (e) {
    throw new AppError(502, "BAD_GATEWAY", `the agent's home ${home.url} cannot be reached (${(e as Error).message})`);
  }
  const parsed = (await res.json().catch(() => null)) as Record<string, unknown> | null;
  if (!parsed) throw new AppError(502, "BAD_GATEWAY", `the agent's home ${home.url} answered HTTP ${res.status} without JSON`);
  return { status: res.status, body: parsed };
}

function homeRefused(home: Home, status: number, body: Record<string, unknown>): AppError {
  const details = `the agent's home ${home.url} refused: HTTP ${status} ${String(body.message ?? "")}${body.details ? ` (${String(body.details)})` : ""}`;
  // A refusal (4xx) will not change by asking again; a failure at home may.
  return status >= 500 ? new AppError(502, "BAD_GATEWAY", details) : new AppError(403, "ACCESS_DENIED", details);
}

async function homeToken(home: Home, fresh: boolean): Promise<string> {
  const key = `${home.url}\u0000${home.email}`;
  const known = tokens.get(key);
  if (known && !fresh && known.expires * 1000 > Date.now() + 30_000) return known.token;
  const r = await callHome(home, "/api/v1/auth/token", { email: home.email, password: home.password });
  if (r.status !== 200 || typeof r.body.token !== "string") throw homeRefused(home, r.status, r.body);
  tokens.set(key, { token: r.body.token, expires: Number(r.body.token_expires) || 0 });
  return r.body.token;
}

/** One call of the home's agent-remote, signed in as the hub's user there (a token made again once when refused). */
async function remote(home: Home, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  let r = await callHome(home, "/api/v1/agent-remote", body, await homeToken(home, false));
  if (r.status === 401) r = await callHome(home, "/api/v1/agent-remote", body, await homeToken(home, true));
  if (r.status !== 200) throw homeRefused(home, r.status, r.body);
  return r.body;
}

/** A run of a remote agent: asks its home, then polls its updates until the reply or the run's bound. */
export async function askRemote(site: Site, agent: RosterAgent, c: Conversation, r: Run, asker: Principal, events: RunEvents): Promise<RunResult> {
  const home = agent.home!;
  const asked = c.messages.findLast((m) => m.from === "user" && m.at <= r.started) ?? c.messages.findLast((m) => m.from === "user");
  const before = c.messages.filter((m) => m.id < (asked?.id ?? 0)).slice(-MAX_EARLIER).map((m) => ({ from: m.from, text: m.text }));
  const answer = await remote(home, {
    operation: "ask", conversation: c.uuid, owner: asker.email ?? asker.uuid, agent: agent.id, run: r.id,
    message: asked?.text ?? "", may_act: mayAct(asker), messages: before,
  });
  let since = typeof answer.now === "number" ? answer.now - 1 : 0;
  const steps: Step[] = [];
  const deadline = r.started + site.config.agentRunTimeout * 1000;
  while (Date.now() < deadline) {
    await Bun.sleep(POLL_MS);
    const u = await remote(home, { operation: "updates", since });
    if (typeof u.now === "number") since = u.now;
    for (const x of (Array.isArray(u.updates) ? u.updates : []) as Update[]) {
      if (x.run !== r.id) continue;
      if (x.type === "notice") {
        const step: Step = { tool: "remote", arguments: {}, ok: true, summary: String(x.text), at: Date.now() };
        steps.push(step);
        await events.step?.(step);
      } else if (x.type === "reply") {
        events.text?.(String(x.text));
        return { text: String(x.text), steps, stopped: false };
      } else if (x.type === "failed") {
        throw new AppError(403, "ACCESS_DENIED", `@${agent.id} failed at its home: ${String(x.text)}`);
      }
    }
  }
  throw new AppError(502, "BAD_GATEWAY", `@${agent.id} gave no answer within ${site.config.agentRunTimeout} s`);
}

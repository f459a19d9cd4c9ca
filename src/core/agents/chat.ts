/**
 * agent-chat's operations (list, get, post, read, delete, unread), for a signed-in user and their
 * own conversations. A post stores the message and queues one run per addressed agent in the same
 * transaction: the durable queue then runs them (core/agents/job.ts), so a restart loses no question.
 */
import type { Principal } from "../access/permissions";
import { takeAiCall } from "../access/rate-limit";
import { AppError, badRequest, denied, unauthorized } from "../errors";
import { wakeWorkers } from "../jobs/enqueue";
import type { Site } from "../site";
import type { StoreTx } from "../store/types";
import { addMessage, changeConversation, CONVERSATIONS, conversationsOf, deleteConversation, newConversation, openRuns, ownConversation, type Conversation, type Message, type Run } from "./conversations";
import { DEFAULT_AGENT } from "./definitions";
import { chatPermission, requireTeam, roster, type RosterAgent } from "./roster";

export const AGENT_RUN_JOB = "agent-run";
/** The longest message a user (or another site) may send. */
export const MAX_TEXT = 8000;
const TITLE_CHARS = 80;
const LAST_CHARS = 200;
/** Steps a working run shows (the latest). */
const STEPS_SHOWN = 3;

export type TeamView = Record<string, string>;
export type WorkingView = { run: string; agent: string; name: string; status: "working" | "failed"; steps: string[]; error?: string };
export type ConversationView = { uuid: string; title: string; team: TeamView; messages: Message[]; working: WorkingView[] };

const teamView = (team: Map<string, RosterAgent>): TeamView => Object.fromEntries([...team].map(([id, a]) => [id, a.name]));

function userOf(p: Principal): string {
  if (p.kind !== "user" || !p.uuid) throw unauthorized("chatting with agents needs a signed-in user");
  return p.uuid;
}

/** A run still open past the bound is shown as failed (its job may still be retrying). */
export const timedOut = (site: Site, r: Run, now = Date.now()) => now - r.started > site.config.agentRunTimeout * 1000;

/** The runs the chat shows: open ones, and those that failed since the owner last wrote. */
function workingView(site: Site, c: Conversation, names: Map<string, RosterAgent>): WorkingView[] {
  const lastAsked = c.messages.findLast((m) => m.from === "user")?.at ?? 0;
  const out: WorkingView[] = [];
  for (const r of c.runs) {
    const open = (r.status === "queued" || r.status === "working") && !timedOut(site, r);
    const failed = r.status === "failed" || ((r.status === "queued" || r.status === "working") && timedOut(site, r));
    if (!open && !(failed && r.started >= lastAsked)) continue;
    const view: WorkingView = { run: r.id, agent: r.agent, name: names.get(r.agent)?.name ?? r.agent, status: open ? "working" : "failed", steps: r.steps.slice(-STEPS_SHOWN).map((s) => s.summary) };
    if (failed) view.error = r.error ?? `no answer within ${site.config.agentRunTimeout} s`;
    out.push(view);
  }
  return out;
}

/** `all`: the site's agents (roster.ts), which name the runs of agents the user may no longer ask too. */
export function conversationView(site: Site, c: Conversation, team: Map<string, RosterAgent>, all: Map<string, RosterAgent>): ConversationView {
  return { uuid: c.uuid, title: c.title, team: teamView(team), messages: c.messages, working: workingView(site, c, all) };
}

/** When the conversation last changed, in milliseconds (as a message's `at`): its latest message or run step. */
const updatedAt = (c: Conversation) => Math.max(c.modified * 1000, ...c.messages.map((m) => m.at), ...c.runs.map((r) => r.updated));
const unreadOf = (c: Conversation) => c.messages.filter((m) => m.from !== "user" && m.at > c.read_at).length;
const waitingOf = (site: Site, c: Conversation) => openRuns(c).some((r) => !timedOut(site, r));

export async function listConversations(site: Site, p: Principal) {
  const team = requireTeam(site, p);
  const list = await conversationsOf(site, userOf(p));
  return {
    conversations: list.map((c) => {
      const last = c.messages.at(-1);
      return { uuid: c.uuid, title: c.title, updated_at: updatedAt(c), unread: unreadOf(c), waiting: waitingOf(site, c), last: last ? { from: last.from, text: last.text.slice(0, LAST_CHARS), at: last.at } : null };
    }),
    team: teamView(team),
  };
}

export async function getConversationView(site: Site, p: Principal, uuid: unknown): Promise<ConversationView> {
  const all = roster(site);
  const team = requireTeam(site, p, all);
  return conversationView(site, await ownConversation(site, userOf(p), uuid), team, all);
}

export async function unread(site: Site, p: Principal) {
  requireTeam(site, p);
  const list = await conversationsOf(site, userOf(p));
  return { unread: list.reduce((n, c) => n + unreadOf(c), 0), waiting: list.filter((c) => waitingOf(site, c)).length };
}

export async function markRead(site: Site, p: Principal, uuid: unknown): Promise<{ ok: true }> {
  requireTeam(site, p);
  const c = await ownConversation(site, userOf(p), uuid);
  await changeConversation(site, c.uuid, (x) => void (x.read_at = Date.now()));
  return { ok: true };
}

export async function removeConversation(site: Site, p: Principal, uuid: unknown): Promise<{ ok: true }> {
  requireTeam(site, p);
  const c = await ownConversation(site, userOf(p), uuid);
  await deleteConversation(site, c.uuid);
  return { ok: true };
}

/** The message's text, checked: 422 when empty or too long. */
export function checkText(raw: unknown): string {
  if (typeof raw !== "string") throw new AppError(422, "INVALID_DATA", "`text` is required", { errors: { text: "is required" } });
  const text = raw.trim();
  if (!text) throw new AppError(422, "INVALID_DATA", "`text` is empty", { errors: { text: "must not be empty" } });
  if (text.length > MAX_TEXT) throw new AppError(422, "INVALID_DATA", `\`text\` holds ${text.length} characters; at most ${MAX_TEXT}`, { errors: { text: `must be at most ${MAX_TEXT} characters` } });
  return text;
}

const MENTION = /(?:^|[^\w@.])@([a-z0-9][a-z0-9_-]{0,62})\b/g;

/**
 * Who a message goes to: the agents it @mentions, else the agent last involved, else the default.
 * An @word that names no agent is text (an address, a handle); one naming an agent the user may not
 * ask is refused (403).
 */
export function addressed(text: string, c: Conversation | null, team: Map<string, RosterAgent>, known: Map<string, RosterAgent>): string[] {
  const mentioned = [...new Set([...text.matchAll(MENTION)].map((m) => m[1]))].filter((id) => known.has(id));
  const refused = mentioned.filter((id) => !team.has(id));
  if (refused.length) throw denied(refused.map(chatPermission), `you may not ask ${refused.map((id) => `@${id}`).join(", ")}`);
  if (mentioned.length) return mentioned;
  if (c?.agent && team.has(c.agent)) return [c.agent];
  return [team.has(DEFAULT_AGENT) ? DEFAULT_AGENT : [...team.keys()][0]];
}

/** Queues the run of one agent, inside the conversation's transaction. */
export async function queueRun(site: Site, tx: StoreTx, c: Conversation, agent: string, extra: Partial<Run> = {}): Promise<Run> {
  const now = Date.now();
  const run: Run = { id: extra.id ?? crypto.randomUUID(), agent, status: "queued", steps: [], started: now, updated: now, attempts: 0, ...extra };
  c.runs.push(run);
  await tx.enqueueJob({ type: AGENT_RUN_JOB, resource: CONVERSATIONS, action: "create", uuid: c.uuid, payload: JSON.stringify({ conversation: c.uuid, run: run.id }), run_at: now });
  tx.afterCommit(() => wakeWorkers(site));
  return run;
}

export async function post(site: Site, p: Principal, body: { uuid?: unknown; text?: unknown }): Promise<ConversationView> {
  const all = roster(site);
  const team = requireTeam(site, p, all);
  const owner = userOf(p);
  const text = checkText(body.text);
  if (body.uuid !== undefined && typeof body.uuid !== "string") throw badRequest("`uuid` must be a conversation's uuid (leave it out for a new conversation)");
  const existing = body.uuid === undefined ? null : await ownConversation(site, owner, body.uuid);
  const to = addressed(text, existing, team, all);
  const refuseBusy = (c: Conversation) => {
    const busy = openRuns(c).filter((r) => to.includes(r.agent) && !timedOut(site, r));
    if (busy.length) throw new AppError(409, "CONFLICT", `${busy.map((r) => `@${r.agent}`).join(", ")} is still answering in this conversation; wait for the reply`);
  };
  // Checked before the rate is counted (a refused post costs nothing), and again where it counts.
  if (existing) refuseBusy(existing);
  for (const _ of to) await takeAiCall(site, p);
  const write = async (c: Conversation, tx: StoreTx) => {
    refuseBusy(c);
    if (!c.title) c.title = text.replace(/\s+/g, " ").slice(0, TITLE_CHARS);
    addMessage(c, { from: "user", text });
    c.read_at = Date.now();
    for (const agent of to) await queueRun(site, tx, c, agent);
  };
  if (existing) {
    const done = await changeConversation(site, existing.uuid, write);
    if (!done) throw new AppError(404, "RESOURCE_NOT_FOUND", `conversation ${existing.uuid} does not exist`);
    return conversationView(site, done.c, team, all);
  }
  const { c } = await newConversation(site, owner, {}, write);
  return conversationView(site, c, team, all);
}

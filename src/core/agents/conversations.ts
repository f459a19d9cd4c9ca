/**
 * Conversations with agents, stored as rows of the internal resource `.agent_conversations` (one
 * row each: its messages and its runs), written by this module alone. The record API never
 * serves them, and agent-chat shows a conversation to its owner only.
 *
 * Every change reads and writes the row in one transaction that keeps other writers of the
 * resource out (PostgreSQL: a table lock, on every instance), so a reply arriving while the owner
 * posts loses neither.
 */
import { notFound } from "../errors";
import { queryList } from "../records/service";
import type { Site } from "../site";
import type { StoreTx, StoredRecord } from "../store/types";
import type { Step } from "./run";

export const CONVERSATIONS = ".agent_conversations";

export type Message = {
  id: number;
  /** "user" for the owner, else the agent's id. */
  from: string;
  text: string;
  /** Milliseconds since the epoch. */
  at: number;
  /** The admin page of the (last) record the agent touched in the run that wrote this reply. */
  link?: string;
  /** What the run did, one line per tool call ("updated articles/…"). */
  steps?: string[];
  run?: string;
};

export type RunState = "queued" | "working" | "done" | "failed";
export type Run = {
  id: string;
  agent: string;
  status: RunState;
  steps: Step[];
  started: number;
  updated: number;
  /** Why it failed, or the last attempt's error while it is retried. */
  error?: string;
  /** Attempts started (the job queue retries a failed run). */
  attempts: number;
  /** Another site's run (agent-remote at home): may it write, and where its updates go. */
  mayAct?: boolean;
};

export type Conversation = {
  uuid: string;
  owner: string;
  title: string;
  messages: Message[];
  runs: Run[];
  /** The owner read every message up to this time. */
  read_at: number;
  /** The agent last involved: a message without @mention goes to it. */
  agent: string | null;
  next: number;
  /** Who asked, when the conversation was handed over by another site (agent-remote): its owner's name there. */
  remote?: { hub: string; conversation: string; owner: string };
  modified: number;
};

/** Runs kept per conversation (the newest): a run's steps are shown while it works and just after. */
const RUNS_KEPT = 20;

function fromRow(row: StoredRecord): Conversation {
  const d = JSON.parse(row.data) as Omit<Conversation, "uuid" | "modified">;
  return { uuid: row.uuid, owner: d.owner, title: d.title ?? "", messages: d.messages ?? [], runs: d.runs ?? [], read_at: d.read_at ?? 0, agent: d.agent ?? null, next: d.next ?? 1, remote: d.remote, modified: row._modified };
}

function toData(c: Conversation, keep: number): string {
  const { uuid: _u, modified: _m, ...rest } = c;
  return JSON.stringify({ ...rest, messages: c.messages.slice(-keep), runs: c.runs.slice(-RUNS_KEPT) });
}

export async function getConversation(site: Site, uuid: string): Promise<Conversation | null> {
  const row = /^[0-9a-f-]{36}$/.test(uuid) ? await site.store.get(CONVERSATIONS, uuid) : null;
  return row ? fromRow(row) : null;
}

/** The owner's conversation, or 404 (another user's is as unknown as one that does not exist). */
export async function ownConversation(site: Site, owner: string, uuid: unknown): Promise<Conversation> {
  const c = typeof uuid === "string" ? await getConversation(site, uuid) : null;
  if (!c || c.owner !== owner) throw notFound(`conversation ${typeof uuid === "string" ? uuid.slice(0, 64) : ""} does not exist`);
  return c;
}

/** The owner's conversations, the latest first (at most `limit`). */
export async function conversationsOf(site: Site, owner: string, limit = 200): Promise<Conversation[]> {
  const def = site.defs.get(CONVERSATIONS)!;
  const { rows } = await queryList(site, def, { filter: `owner:${owner}`, sort: "_modified|desc", limit: String(limit) });
  const out: Conversation[] = [];
  for await (const row of rows) out.push(fromRow(row));
  return out;
}

export type Change<T> = (c: Conversation, tx: StoreTx) => T | Promise<T>;

/**
 * Changes one conversation in a transaction of its own; `fn` changes `c` in place (and may queue
 * jobs on `tx`). Null when the conversation is gone (deleted while a run worked).
 */
export async function changeConversation<T>(site: Site, uuid: string, fn: Change<T>): Promise<{ c: Conversation; result: T } | null> {
  return site.store.transaction(async (tx) => {
    const row = await tx.get(CONVERSATIONS, uuid);
    if (!row) return null;
    const c = fromRow(row);
    const result = await fn(c, tx);
    const now = Math.floor(Date.now() / 1000);
    await tx.update(CONVERSATIONS, { ...row, data: toData(c, site.config.agentMessages), _modified: now, _modified_by: row._modified_by });
    c.modified = now;
    return { c, result };
  }, { exclusive: CONVERSATIONS });
}

/** A new conversation of `owner`, made and changed by `fn` in one transaction. */
export async function newConversation<T>(site: Site, owner: string, fields: Partial<Conversation>, fn: Change<T>): Promise<{ c: Conversation; result: T }> {
  return site.store.transaction(async (tx) => {
    const now = Math.floor(Date.now() / 1000);
    const c: Conversation = { uuid: crypto.randomUUID(), owner, title: "", messages: [], runs: [], read_at: 0, agent: null, next: 1, modified: now, ...fields };
    const result = await fn(c, tx);
    await tx.insert(CONVERSATIONS, { uuid: c.uuid, data: toData(c, site.config.agentMessages), _created: now, _modified: now, _created_by: owner, _modified_by: owner });
    return { c, result };
  }, { exclusive: CONVERSATIONS });
}

export async function deleteConversation(site: Site, uuid: string): Promise<void> {
  await site.store.transaction((tx) => tx.delete(CONVERSATIONS, uuid), { exclusive: CONVERSATIONS });
}

export const addMessage = (c: Conversation, m: Omit<Message, "id" | "at">): Message => {
  const message: Message = { id: c.next++, at: Date.now(), ...m };
  c.messages.push(message);
  return message;
};

export const runOf = (c: Conversation, run: string): Run | undefined => c.runs.find((r) => r.id === run);
export const openRuns = (c: Conversation): Run[] => c.runs.filter((r) => r.status === "queued" || r.status === "working");

/**
 * Conversations with AI agents (`/api/v1/agent-chat`, src/http/agents.ts): who may chat, how many
 * replies are unread, and one conversation followed as its runs work. The stream is Server-Sent
 * Events, opened as live.ts opens /api/v1/realtime (same origin, the session cookie: the admin's
 * policy allows `connect-src 'self'`); the server ends it once no run works.
 */
import { signal } from "@preact/signals";
import { api, ApiError, type Envelope } from "./api";
import { may, permissions } from "./state";

export type Team = Record<string, string>;
export type Message = { id: number; from: string; text: string; at: number; link?: string; steps?: string[]; run?: string };
export type Working = { run: string; agent: string; name: string; status: "working" | "failed"; steps: string[]; error?: string };
export type ConversationView = { uuid: string; title: string; team: Team; messages: Message[]; working: Working[] };
/** `updated_at` and a message's `at`: milliseconds since the epoch. */
export type ConversationSummary = { uuid: string; title: string; updated_at: number; unread: number; waiting: boolean; last: { from: string; text: string; at: number } | null };
/** One tool call of a run, as the stream tells it. */
export type LiveStep = { tool: string; summary: string; ok?: boolean; resource?: string; uuid?: string };

/** Whether the signed-in user may chat: unknown until `unread` answered; a 403 hides the chat. */
export const chatAccess = signal<"unknown" | "yes" | "no">("unknown");
export const unreadCount = signal({ unread: 0, waiting: 0 });
/** The agents the user may ask (id → name), as the last list or conversation named them. */
export const chatTeam = signal<Team>({});

const PATH = "/agent-chat";

/** A POST operation (all operations may be POSTed; post, read and delete must be). */
export async function chat<T extends Envelope = Envelope>(operation: string, body: Record<string, unknown> = {}): Promise<T> {
  try {
    return (await api<T>("POST", PATH, { operation, ...body })).body;
  } catch (e) {
    if (e instanceof ApiError && e.status === 403 && e.body.message === "ACCESS_DENIED" && operation !== "post") chatAccess.value = "no";
    throw e;
  }
}

export const getConversation = (uuid: string) => chat<Envelope & ConversationView>("get", { uuid });
export const stillWorking = (v: ConversationView | null) => Boolean(v?.working.some((w) => w.status === "working"));

/** Any chat-<agent> (or (all)): else the server would refuse, and nothing is asked. */
const mightChat = () => may("(all)") || [...permissions.value].some((p) => p.startsWith("chat-"));

/** When the unread count was last asked. */
let askedAt = 0;

/** Asks for the unread count now. */
export async function refreshUnread(): Promise<void> {
  if (!mightChat()) {
    chatAccess.value = "no";
    return;
  }
  askedAt = Date.now();
  try {
    const r = await chat<Envelope & { unread: number; waiting: number }>("unread");
    unreadCount.value = { unread: r.unread, waiting: r.waiting };
    chatAccess.value = "yes";
  } catch {
    // A 403 hid the chat (in chat()); anything else is asked again later.
  }
}

/** How often the unread count is asked: often while an agent works, seldom otherwise. */
const IDLE_MS = 30_000;
const WAITING_MS = 5_000;

/** Keeps `unreadCount` current until the returned stop; stops for good once the chat is refused. */
export function watchUnread(): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  // Started for a user just signed in: nothing known yet of what they may.
  chatAccess.value = "unknown";
  unreadCount.value = { unread: 0, waiting: 0 };
  askedAt = 0;
  const tick = async () => {
    // Asked elsewhere meanwhile (the panel closed, a conversation was read) counts.
    const due = askedAt + (unreadCount.value.waiting ? WAITING_MS : IDLE_MS);
    if (Date.now() >= due) await refreshUnread();
    if (stopped || chatAccess.value === "no") return;
    timer = setTimeout(() => void tick(), WAITING_MS);
  };
  void tick();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

export type FollowHandlers = {
  state(v: ConversationView): void;
  text(run: string, agent: string, delta: string): void;
  step(run: string, agent: string, step: LiveStep): void;
  done(run: string, message: Message): void;
  failed(run: string, error: string): void;
  /** The stream ended: the server closed it (no run works) or it failed (then ask `get` instead). */
  end(): void;
};

/** Follows one conversation's runs through `events` until the stream ends or `close()`. */
export function followConversation(uuid: string, on: FollowHandlers): { close(): void } {
  const es = new EventSource(`/api/v1${PATH}?${new URLSearchParams({ operation: "events", uuid })}`, { withCredentials: true });
  let open = true;
  const listen = (name: string, fn: (data: Record<string, any>) => void) =>
    es.addEventListener(name, (e) => {
      if (!open) return;
      try {
        fn(JSON.parse((e as MessageEvent<string>).data) as Record<string, any>);
      } catch {
        // A malformed event is skipped; the next `state` brings the whole view.
      }
    });
  listen("state", (d) => on.state(d as ConversationView));
  listen("text", (d) => on.text(d.run, d.agent, String(d.delta ?? "")));
  listen("step", (d) => on.step(d.run, d.agent, d.step as LiveStep));
  listen("done", (d) => on.done(d.run, d.message as Message));
  listen("failed", (d) => on.failed(d.run, String(d.error ?? "")));
  // The server's end of the stream is an error too (the browser would reconnect): either way it stops here.
  es.onerror = () => {
    if (!open) return;
    open = false;
    es.close();
    on.end();
  };
  return {
    close() {
      open = false;
      es.close();
    },
  };
}

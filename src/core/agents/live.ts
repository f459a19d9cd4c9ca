/**
 * What a run is doing right now, for whoever follows its conversation in this process (agent-chat's
 * `events`): the reply's text as it streams from the provider, each tool step, the end. Only the
 * text streamed so far by a working run is kept, so that a follower who comes in the middle of a
 * reply starts with all of it; a follower on another instance (or without SSE) reads the stored
 * conversation instead.
 */
import type { Site } from "../site";
import type { Message } from "./conversations";
import type { Step } from "./run";

export type LiveEvent =
  | { type: "working"; run: string; agent: string }
  | { type: "text"; run: string; agent: string; delta: string }
  | { type: "step"; run: string; agent: string; step: Step }
  | { type: "done"; run: string; agent: string; message: Message }
  | { type: "failed"; run: string; agent: string; error: string };

type Follower = (e: LiveEvent) => void;
type Channel = { followers: Set<Follower>; streamed: Map<string, { agent: string; text: string }> };
const channels = new WeakMap<Site, Map<string, Channel>>();

function channel(site: Site, conversation: string): Channel {
  let all = channels.get(site);
  if (!all) channels.set(site, (all = new Map()));
  let c = all.get(conversation);
  if (!c) all.set(conversation, (c = { followers: new Set(), streamed: new Map() }));
  return c;
}

function forget(site: Site, conversation: string, c: Channel): void {
  if (!c.followers.size && !c.streamed.size) channels.get(site)?.delete(conversation);
}

export function tell(site: Site, conversation: string, e: LiveEvent): void {
  const c = channel(site, conversation);
  if (e.type === "text") {
    const sofar = c.streamed.get(e.run);
    c.streamed.set(e.run, { agent: e.agent, text: (sofar?.text ?? "") + e.delta });
  } else if (e.type !== "step") {
    // A new attempt answers from the start; an end leaves nothing streaming.
    c.streamed.delete(e.run);
  }
  for (const fn of c.followers) fn(e);
  forget(site, conversation, c);
}

/** An attempt of the run ended however it did (done, failed, or to be tried again): its text is no longer streaming. */
export function stopped(site: Site, conversation: string, run: string): void {
  const c = channels.get(site)?.get(conversation);
  if (!c) return;
  c.streamed.delete(run);
  forget(site, conversation, c);
}

/**
 * Calls `fn` with every event of the conversation's runs in this process, first (at once) with one
 * `text` event per working run holding what it has streamed so far; returns the stop.
 */
export function follow(site: Site, conversation: string, fn: Follower): () => void {
  const c = channel(site, conversation);
  c.followers.add(fn);
  for (const [run, { agent, text }] of c.streamed) fn({ type: "text", run, agent, delta: text });
  return () => {
    c.followers.delete(fn);
    forget(site, conversation, c);
  };
}

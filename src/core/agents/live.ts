/**
 * What a run is doing right now, for whoever follows its conversation in this process (agent-chat's
 * `events`): the reply's text as it streams from the provider, each tool step, the end. Nothing here
 * is stored; a follower on another instance (or without SSE) reads the conversation instead.
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
const channels = new WeakMap<Site, Map<string, Set<Follower>>>();

export function tell(site: Site, conversation: string, e: LiveEvent): void {
  for (const fn of channels.get(site)?.get(conversation) ?? []) fn(e);
}

/** Calls `fn` with every event of the conversation's runs in this process; returns the stop. */
export function follow(site: Site, conversation: string, fn: Follower): () => void {
  let all = channels.get(site);
  if (!all) channels.set(site, (all = new Map()));
  const set = all.get(conversation) ?? new Set<Follower>();
  all.set(conversation, set);
  set.add(fn);
  return () => {
    set.delete(fn);
    if (!set.size) all.delete(conversation);
  };
}

/**
 * Turns a definition's `events` into work. `job:<type>` entries become rows of the durable queue,
 * written by a txHook inside the record's own transaction: a job exists if and only if its write
 * committed (a rejected or rolled-back write queues nothing). Named entries are delivered after
 * commit by the extension runtime (src/core/extensions/events.ts).
 */
import type { ResourceDef } from "../definitions/types";
import type { Site, TxHook, WriteEvent } from "../site";
import type { StoreTx } from "../store/types";

export const LIFECYCLE = ["create", "update", "delete"] as const;
export type Lifecycle = (typeof LIFECYCLE)[number];

/** The entries a definition lists for one action, split into named events and job types. */
export function lifecycleEntries(def: ResourceDef | undefined, action: Lifecycle): { events: string[]; jobs: string[] } {
  const list = def?.raw.events?.[action];
  const out = { events: [] as string[], jobs: [] as string[] };
  if (!Array.isArray(list)) return out;
  for (const entry of list) {
    if (typeof entry !== "string" || entry === "") continue;
    if (entry.startsWith("job:")) out.jobs.push(entry.slice(4));
    else out.events.push(entry);
  }
  return out;
}

const NAME = /^[A-Za-z0-9_.:-]+$/;

/** Problems in a definition's `events` key, as sentences; empty when it is well-formed. */
export function checkEvents(def: ResourceDef): string[] {
  const ev = def.raw.events as unknown;
  if (ev === undefined) return [];
  if (!ev || typeof ev !== "object" || Array.isArray(ev)) return ["`events` must be an object with keys create, update, delete"];
  const problems: string[] = [];
  for (const [key, list] of Object.entries(ev)) {
    if (!(LIFECYCLE as readonly string[]).includes(key)) problems.push(`events.${key}: unknown key (create, update or delete)`);
    else if (!Array.isArray(list)) problems.push(`events.${key} must be a list of event names or job:<type> entries`);
    else for (const e of list) {
      const name = typeof e === "string" && e.startsWith("job:") ? e.slice(4) : e;
      if (typeof name !== "string" || !NAME.test(name)) problems.push(`events.${key}: ${JSON.stringify(e)} is not an event name or job:<type> (letters, digits, _ . : -)`);
    }
  }
  return problems;
}

/** Called after a commit that queued jobs, so an idle worker in this process starts at once. */
const wakers = new WeakMap<Site, Set<() => void>>();
export function onJobQueued(site: Site, fn: () => void): () => void {
  const set = wakers.get(site) ?? new Set();
  wakers.set(site, set);
  set.add(fn);
  return () => set.delete(fn);
}

/** Wakes this process's idle workers after a commit that queued jobs outside a record write (agent runs). */
export const wakeWorkers = (site: Site) => wakers.get(site)?.forEach((fn) => fn());

/** The txHook installed on every site (HTTP, CLI import…): queues the write's `job:` entries. */
export function queueJobsHook(site: Site): TxHook {
  return {
    wants: (resource, action) => lifecycleEntries(site.defs.get(resource), action).jobs.length > 0,
    run: async (tx: StoreTx, e: WriteEvent): Promise<void> => {
      const { jobs } = lifecycleEntries(site.defs.get(e.resource), e.action);
      if (!jobs.length) return;
      const payload = JSON.stringify(e);
      const now = Date.now();
      for (const type of jobs) await tx.enqueueJob({ type, resource: e.resource, action: e.action, uuid: e.uuid, payload, run_at: now });
      tx.afterCommit(() => wakeWorkers(site));
    },
  };
}

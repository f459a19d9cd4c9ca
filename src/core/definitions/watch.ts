/**
 * Follows DIR/resources while the server runs, so an edited definition, or a resource created by
 * `resd import` from the shell, is served without a restart; and the schema changes of other
 * instances (PostgreSQL), after which this one's definitions may be the older ones.
 *
 * A change is applied as soon as it is seen, and requests that arrive meanwhile wait for it
 * (`settling`): the line of a script after the one that wrote a file sees the new definition.
 * Editors write files in several steps, so that first pass is quiet: a state that does not load
 * (a half-written file) or that would take a resource away (an editor moving the file aside before
 * writing it anew) is left to the settled pass, `quietMs` after the last change, which applies
 * whatever is there then, or reports why it cannot while the definitions in force stay.
 */
import { mkdirSync, statSync, watch } from "node:fs";
import { join } from "node:path";
import type { Site } from "../site";
import type { SchemaChange } from "../store/types";
import { loadDefinitions, RESOURCE_NAME, sameDefinition } from "./load";

export type WatchLog = (message: string, fields: Record<string, string | number>, level?: "info" | "error") => void;

export type DefinitionsWatch = {
  /** While a change just seen is being applied: settles once it is (or after SETTLE_WAIT_MS); else null. */
  settling(): Promise<void> | null;
  /**
   * A request names a resource that is not served. When resources/<name>.json is there, written
   * since it was last tried, it is applied as if its change had been seen (the watcher's event
   * may not have arrived yet on a busy machine, or ever on a file system without notifications);
   * else null.
   */
  unseen(name: string | null): Promise<void> | null;
  stop(): void;
};

/** The longest a request waits for a definition change being applied (a reload takes a few ms). */
export const SETTLE_WAIT_MS = 2000;

export function watchDefinitions(site: Site, log: WatchLog, quietMs = 250): DefinitionsWatch {
  const folder = join(site.config.dir, "resources");
  mkdirSync(folder, { recursive: true });
  /** Changes seen, and the count the definitions in force reflect: equal once the latest state is applied. */
  let seen = 0;
  let applied = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  // One reload at a time, in the order asked.
  let running: Promise<void> = Promise.resolve();
  const serial = (fn: () => Promise<void>) => (running = running.then(fn).catch(() => undefined));

  const reload = async (at: number, all = false) => {
    const changes: SchemaChange[] = await site.reload({ all });
    applied = at;
    site.reloadFailure = null;
    log("definitions reloaded", { resources: site.defs.size, changes: changes.map((c) => `${c.resource}: ${c.action} ${c.detail}`).join("; ") || "none" });
    for (const c of changes) if (c.action === "refused") log("resource not served", { resource: c.resource, reason: c.detail }, "error");
  };

  /** The settled pass (and another instance's schema change, `always`): applies what is there, or says why not. */
  const settle = (always: boolean) => serial(async () => {
    const at = seen;
    if (!always && at === applied) return; // the first pass applied this very state
    try {
      await reload(at, always);
    } catch (e) {
      site.reloadFailure = { message: (e as Error).message, at: Date.now() };
      log("definitions not reloaded; the previous ones stay in force", { error: (e as Error).message }, "error");
    }
  });

  /** The first pass, right after a change: applies a state that loads and keeps every resource; silent otherwise. */
  const firstPass = () => serial(async () => {
    const at = seen;
    if (at === applied) return;
    try {
      const fresh = loadDefinitions(site.config.dir);
      for (const name of site.defs.keys()) if (!fresh.has(name)) return;
      // An event that changed nothing (the second of one write, a touch) costs no reload.
      if (fresh.size === site.defs.size && [...fresh.values()].every((d) => sameDefinition(d, site.defs.get(d.name)))) {
        applied = at;
        site.reloadFailure = null; // what failed to load is gone again
        return;
      }
      await reload(at);
    } catch {
      // Not whole yet, or not valid: the settled pass decides, and reports.
    }
  });

  // The latest first pass: passes run in order, so once it is done every change seen before it is.
  let pending: Promise<void> | null = null;
  const changed = (): Promise<void> => {
    seen++;
    clearTimeout(timer);
    timer = setTimeout(() => void settle(false), quietMs);
    // One per change; a pass that finds the state it would apply already applied returns at once.
    const pass = withinBound(firstPass());
    pending = pass;
    void pass.then(() => { if (pending === pass) pending = null; });
    return pass;
  };
  const watcher = watch(folder, (_event, file) => {
    if (!file || String(file).endsWith(".json")) changed();
  });
  // Another instance changed a schema: this one's definitions may now be the older ones.
  const unsubscribe = site.store.onSchemaChange(() => void settle(true));
  /** Modification time of each unserved resource's file when a request last made it be tried. */
  const tried = new Map<string, number>();
  return {
    settling: () => pending,
    unseen: (name) => {
      if (name === null || site.defs.has(name) || site.refused.has(name) || !RESOURCE_NAME.test(name)) return null;
      let mtime: number;
      try {
        mtime = statSync(join(folder, `${name}.json`)).mtimeMs;
      } catch {
        return null; // no such file: a plain 404
      }
      if (tried.get(name) === mtime) return null;
      tried.set(name, mtime);
      return changed();
    },
    stop: () => {
      clearTimeout(timer);
      watcher.close();
      unsubscribe();
    },
  };
}

/** `p`, or a promise that settles after SETTLE_WAIT_MS, whichever comes first. */
function withinBound(p: Promise<void>): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<void>((resolve) => { timer = setTimeout(resolve, SETTLE_WAIT_MS); });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

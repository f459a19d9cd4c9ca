/**
 * Follows DIR/resources while the server runs, so an edited definition, or a resource created by
 * `resd import` from the shell, is served without a restart; and the schema changes of other
 * instances (PostgreSQL), after which this one's definitions may be the older ones. Editors write files in several steps,
 * so changes are applied after a short quiet period; an invalid state is reported and skipped.
 */
import { mkdirSync, watch } from "node:fs";
import { join } from "node:path";
import type { Site } from "../site";
import type { SchemaChange } from "../store/types";

export type WatchLog = (message: string, fields: Record<string, string | number>, level?: "info" | "error") => void;

export function watchDefinitions(site: Site, log: WatchLog, quietMs = 250): () => void {
  const folder = join(site.config.dir, "resources");
  mkdirSync(folder, { recursive: true });
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> = Promise.resolve();
  const apply = () => {
    running = running.then(async () => {
      try {
        const changes: SchemaChange[] = await site.reload();
        site.reloadFailure = null;
        log("definitions reloaded", { resources: site.defs.size, changes: changes.map((c) => `${c.resource}: ${c.action} ${c.detail}`).join("; ") || "none" });
        for (const c of changes) if (c.action === "refused") log("resource not served", { resource: c.resource, reason: c.detail }, "error");
      } catch (e) {
        site.reloadFailure = { message: (e as Error).message, at: Date.now() };
        log("definitions not reloaded; the previous ones stay in force", { error: (e as Error).message }, "error");
      }
    });
  };
  const watcher = watch(folder, (_event, file) => {
    if (file && !String(file).endsWith(".json")) return;
    clearTimeout(timer);
    timer = setTimeout(apply, quietMs);
  });
  // Another instance changed a schema: this one's definitions may now be the older ones.
  const unsubscribe = site.store.onSchemaChange(apply);
  return () => {
    clearTimeout(timer);
    watcher.close();
    unsubscribe();
  };
}

/**
 * Delivers named lifecycle events to extension handlers after the write committed. Order: the
 * entries in the order the definition lists them, and for each, handlers in registration order
 * (extension files by name). A handler's error is logged with its file and never reaches the
 * write, nor the other handlers.
 */
import type { Site, WriteEvent } from "../site";
import { lifecycleEntries } from "../jobs/enqueue";
import type { Registry } from "./registry";

export function eventListener(site: Site, registry: Registry) {
  return async (e: WriteEvent): Promise<void> => {
    const { events } = lifecycleEntries(site.defs.get(e.resource), e.action);
    for (const event of events) {
      for (const { handler, file } of registry.events.get(event) ?? []) {
        try {
          // Each handler gets its own copy: one handler changing the payload cannot affect the next.
          await handler({ event, ...structuredClone(e) });
        } catch (err) {
          console.error(`event "${event}" handler of ${file} failed for ${e.resource}/${e.uuid}:`, err instanceof Error ? err.message : err);
        }
      }
    }
  };
}

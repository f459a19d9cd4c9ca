/**
 * Application hooks inside `resd serve`: `startHooks` loads the extensions, checks the
 * definitions' `events` and `sitemap` keys, subscribes the event listener and starts the job
 * worker; `stopHooks` stops the worker (running jobs get a grace period, then go back to the
 * queue). Called before the server listens, so a broken extension means no server at all.
 */
import type { Site } from "../site";
import { checkEvents, lifecycleEntries, LIFECYCLE } from "../jobs/enqueue";
import { createWorker, type Worker } from "../jobs/worker";
import { checkSitemap } from "../sitemap/build";
import { eventListener } from "./events";
import { loadExtensions } from "./load";
import { AGENT_RUN_JOB, agentRunHandler } from "../agents/job";
import { MAIL_JOB, mailHandler } from "../mail/send";

const workers = new WeakMap<Site, Worker>();

export async function startHooks(site: Site): Promise<void> {
  for (const def of site.defs.values()) {
    const problems = [...checkEvents(def), ...checkSitemap(def)];
    if (problems.length) throw new Error(`invalid definition ${def.file ?? def.name}: ${problems.join("; ")}`);
  }
  const registry = await loadExtensions(site);
  for (const def of site.defs.values()) {
    for (const action of LIFECYCLE) {
      for (const type of lifecycleEntries(def, action).jobs) {
        if (!registry.jobs.has(type)) console.error(`warning: ${def.name} queues job:${type} on ${action} but no extension handles it; such jobs fail and end dead-lettered`);
      }
    }
  }
  site.listeners.push(eventListener(site, registry));
  // Built-in job types come first: an extension cannot take over the agents' runs.
  const builtin = new Map([[AGENT_RUN_JOB, agentRunHandler(site)], [MAIL_JOB, mailHandler(site)]]);
  const worker = createWorker(site, (type) => builtin.get(type) ?? registry.jobs.get(type)?.handler);
  workers.set(site, worker);
  worker.start();
}

export async function stopHooks(site: Site): Promise<void> {
  await workers.get(site)?.stop();
  workers.delete(site);
}

/** Starts the HTTP server for a site and keeps the background upkeep running. */
import type { Site } from "../core/site";
import { HISTORY_WINDOW_MS } from "../core/site";
import { createApp } from "./app";

export async function startServer(site: Site, opts: { quiet?: boolean } = {}) {
  const app = createApp(site);
  app.listen({ hostname: site.config.host, port: site.config.port });
  const server = app.server!;
  const purge = () => site.store.purgeHistory(Date.now() - HISTORY_WINDOW_MS).catch((e) => console.error("history purge failed:", e));
  await purge();
  const timer = setInterval(purge, 3600_000);
  timer.unref();
  if (!opts.quiet) console.log(`resd listening on http://${server.hostname}:${server.port} (site ${site.config.dir})`);
  return { app, server, stop: async () => { clearInterval(timer); await server.stop(); await site.close(); } };
}

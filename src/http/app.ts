/** Composes the HTTP server: every route module is plugged in here and nowhere else. */
import { Elysia } from "elysia";
import type { Site } from "../core/site";
import { notFound } from "../core/errors";
import { handle } from "./context";
import { recordRoutes } from "./records";
import { transferRoutes } from "./transfer";
import { tokenRoutes } from "./token";
import { sessionRoutes } from "./session";
import { twoFactorRoutes } from "./two-factor";
import { apiKeyRoutes } from "./api-keys";
import { openApiRoutes } from "./openapi";
import { extensionRoutes } from "./extensions";
import { sitemapRoutes } from "./sitemap";
import { healthRoutes } from "./health";
import { fileRoutes } from "./files";
import { mediaRoutes } from "./media";
import { adminApiRoutes } from "./admin-api";
import { adminPageRoutes } from "./admin-pages";
import { pageRoutes } from "./pages";
import { gitRoutes } from "./git";
import { realtimeRoutes } from "./realtime";
import { mcpRoutes } from "./mcp";
import { agentRoutes } from "./agents";
import { accountRoutes } from "./account";
import type { Hub } from "../core/realtime/hub";

/** `hub`: the server's realtime streams (null: realtime is off). */
export function createApp(site: Site, hub: Hub | null = null) {
  return new Elysia()
    .use(healthRoutes(site))
    .use(tokenRoutes(site))
    .use(sessionRoutes(site))
    .use(twoFactorRoutes(site))
    .use(apiKeyRoutes(site))
    .use(openApiRoutes(site))
    .use(transferRoutes(site))
    .use(fileRoutes(site))
    .use(mediaRoutes(site))
    .use(adminApiRoutes(site))
    .use(pageRoutes(site))
    .use(gitRoutes(site))
    .use(realtimeRoutes(site, hub))
    .use(mcpRoutes(site))
    .use(agentRoutes(site))
    .use(accountRoutes(site))
    .use(adminPageRoutes(site))
    .use(recordRoutes(site))
    .use(extensionRoutes(site))
    .use(sitemapRoutes(site))
    .onError(({ code, request }) => {
      // Elysia's own errors (no route, unparsable input) get the same envelope as ours.
      if (code === "NOT_FOUND") return handle(site, request, () => { throw notFound(`no route for ${new URL(request.url).pathname}`); });
    });
}

export type App = ReturnType<typeof createApp>;

/**
 * `GET /health` for load balancers and orchestrators: no authentication, no record reads, one
 * database ping (a fresh read-only connection, ~40 µs). 200 while the database answers, 503 when
 * it does not, so a balancer takes the instance out of rotation.
 */
import { Elysia } from "elysia";
import { version, commit } from "../build/version";
import { methodNotAllowed } from "../core/errors";
import type { Site } from "../core/site";
import { handle } from "./context";
import { json } from "./envelope";

export const healthRoutes = (site: Site) =>
  new Elysia({ name: "health" }).all(
    "/health",
    ({ request }) =>
      handle(site, request, async (c) => {
        if (c.request.method !== "GET" && c.request.method !== "HEAD") {
          throw methodNotAllowed("GET, HEAD");
        }
        const ok = await site.store.ping();
        const body = { version, commit, database: ok ? "ok" : "unavailable" };
        return ok
          ? json(200, body, c.t0, { "cache-control": "no-store" })
          : json(503, { message: "SERVICE_UNAVAILABLE", details: "the database does not answer", ...body }, c.t0, { "cache-control": "no-store", "retry-after": "5" });
      }),
    { parse: "none" },
  );

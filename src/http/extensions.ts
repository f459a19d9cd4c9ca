/**
 * Mounts the routes extensions registered. Each runs through `handle`, so it gets the same
 * authentication, request id, timing and error envelope as the built-in endpoints. Access: the
 * route's `permission` (403 with `needs`), else a signed-in caller (401 for anonymous) unless the
 * route is `public`. Other methods on an extension's path answer 405.
 */
import { Elysia } from "elysia";
import type { Site } from "../core/site";
import { methodNotAllowed, unauthorized } from "../core/errors";
import { requirePermission } from "../core/access/permissions";
import { isReply, type RouteRequest } from "../core/extensions/contract";
import { registryOf, type RouteEntry } from "../core/extensions/registry";
import { handle, type Ctx } from "./context";
import { json } from "./envelope";

/** Keys of the envelope itself: an extension's answer cannot overwrite them. */
const RESERVED = ["code", "success", "status", "memory_usage", "execution_time"];

function envelopeBody(value: unknown): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) return { data: value };
  const body = { ...(value as Record<string, unknown>) };
  for (const k of RESERVED) delete body[k];
  return body;
}

async function run(c: Ctx, r: RouteEntry, params: Record<string, string>): Promise<Response> {
  const principal = await c.principal();
  const perms = r.options.permission as string[];
  if (perms.length) requirePermission(principal, ...perms);
  else if (!r.options.public && principal.kind === "anonymous") throw unauthorized("this endpoint needs a signed-in caller");
  let body: Promise<unknown> | null = null;
  const req: RouteRequest = {
    method: c.request.method,
    path: c.url().pathname,
    params,
    query: c.url().searchParams,
    headers: c.request.headers,
    principal,
    body: () => (body ??= c.json()),
    request: c.request,
  };
  const result = await r.handler(req);
  if (result instanceof Response) return result;
  if (isReply(result)) return json(result.status, envelopeBody(result.body), c.t0);
  return json(200, envelopeBody(result), c.t0);
}

export function extensionRoutes(site: Site) {
  const app = new Elysia({ name: "extensions" });
  const allowed = new Map<string, string[]>();
  for (const r of registryOf(site).routes) {
    app.route(r.method, r.path, ({ request, params }) => handle(site, request, (c) => run(c, r, params as Record<string, string>)), { parse: "none" });
    allowed.set(r.path, [...(allowed.get(r.path) ?? []), r.method]);
  }
  for (const [path, methods] of allowed) {
    const allow = methods.join(", ");
    app.all(path, ({ request }) => handle(site, request, () => {
      throw methodNotAllowed(allow);
    }), { parse: "none" });
  }
  return app;
}

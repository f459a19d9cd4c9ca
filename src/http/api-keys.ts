/**
 * The signed-in user's personal API keys (core/access/api-keys.ts), managed with a session or a
 * bearer token, never with a key:
 * - `GET /api/v1/session/api-keys` → `{keys: [{id, name, created, expires, last_used, permissions}]}`;
 * - `POST /api/v1/session/api-keys` `{name, password, expires_in_days?, permissions?}` →
 *   `{id, name, key, created, expires, permissions}` (the key is shown this once);
 * - `DELETE /api/v1/session/api-keys/{id}` → `{ok: true}`.
 */
import { Elysia } from "elysia";
import { apiKeysOf, createApiKey, revokeApiKey } from "../core/access/api-keys";
import { checkPassword } from "../core/access/login";
import { callerUser } from "../core/access/totp";
import { methodNotAllowed } from "../core/errors";
import type { Site } from "../core/site";
import { handle, type Ctx } from "./context";
import { json } from "./envelope";

const NO_STORE = { "cache-control": "no-store" };

async function keys(c: Ctx): Promise<Response> {
  const method = c.request.method;
  if (method !== "GET" && method !== "POST") throw methodNotAllowed("GET, POST");
  const user = await callerUser(c.site, await c.principal());
  if (method === "GET") return json(200, { keys: await apiKeysOf(c.site, user) }, c.t0, NO_STORE);
  const raw = await c.json();
  const b = raw && typeof raw === "object" && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
  await checkPassword(c.site, user, b.password);
  const made = await createApiKey(c.site, user, b);
  return json(201, { id: made.id, name: made.name, key: made.key, created: made.created, expires: made.expires, permissions: made.permissions }, c.t0, NO_STORE);
}

async function one(c: Ctx, id: string): Promise<Response> {
  if (c.request.method !== "DELETE") throw methodNotAllowed("DELETE");
  const user = await callerUser(c.site, await c.principal());
  await revokeApiKey(c.site, id, user.uuid);
  return json(200, { ok: true }, c.t0, NO_STORE);
}

export const apiKeyRoutes = (site: Site) =>
  new Elysia({ name: "api-keys" })
    .all("/api/v1/session/api-keys", ({ request }) => handle(site, request, keys), { parse: "none" })
    .all("/api/v1/session/api-keys/:id", ({ request, params }) => handle(site, request, (c) => one(c, params.id)), { parse: "none" });

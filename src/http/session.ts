/**
 * `/api/v1/session`: sign in (POST e-mail and password), who am I (GET), sign out (DELETE).
 * The cookie is HttpOnly, SameSite=Lax, Path=/, Secure when the request came over https; the
 * session itself lives in the database (see core/access/sessions.ts).
 */
import { Elysia } from "elysia";
import { credentialsFrom, login } from "../core/access/login";
import { SESSION_COOKIE, endSession, sessionPrincipal, startSession } from "../core/access/sessions";
import { publicRecord } from "../core/records/output";
import { methodNotAllowed, unauthorized } from "../core/errors";
import type { Site } from "../core/site";
import { cookieValue, crossOriginRefused, isHttps, sameOrigin } from "./auth";
import { handle, type Ctx } from "./context";
import { json } from "./envelope";

function cookie(request: Request, value: string, maxAge: number): string {
  return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAge}${isHttps(request) ? "; Secure" : ""}`;
}

/** The signed-in user as the API shows any user: password, API flag and tokens never leave. */
async function userBody(site: Site, uuid: string) {
  const row = await site.store.get("users", uuid);
  if (!row) throw unauthorized("not signed in");
  return publicRecord(site.resource("users"), row);
}

async function session(c: Ctx): Promise<Response> {
  const headers: Record<string, string> = { "cache-control": "no-store" };
  const raw = cookieValue(c.request, SESSION_COOKIE);
  switch (c.request.method) {
    case "POST": {
      // Also stops login CSRF: a foreign page cannot sign a visitor in to the attacker's account.
      if (!sameOrigin(c.request)) throw crossOriginRefused();
      const user = await login(c.site, credentialsFrom(await c.json()), { needApi: false });
      if (raw) await endSession(c.site, raw);
      const s = await startSession(c.site, user);
      headers["set-cookie"] = cookie(c.request, s.id, c.site.config.sessionTtl);
      return json(200, { user: await userBody(c.site, user.uuid), session_expires: Math.floor(s.expires / 1000) }, c.t0, headers);
    }
    case "GET": {
      const p = raw ? await sessionPrincipal(c.site, raw) : null;
      if (!p?.uuid) throw unauthorized("not signed in");
      return json(200, { user: await userBody(c.site, p.uuid), permissions: [...p.permissions] }, c.t0, headers);
    }
    case "DELETE": {
      if (!sameOrigin(c.request)) throw crossOriginRefused();
      if (raw) await endSession(c.site, raw);
      headers["set-cookie"] = cookie(c.request, "", 0);
      return json(200, { signed_out: true }, c.t0, headers);
    }
    default:
      throw methodNotAllowed("GET, POST, DELETE");
  }
}

export const sessionRoutes = (site: Site) =>
  new Elysia({ name: "session" }).all("/api/v1/session", ({ request }) => handle(site, request, session), { parse: "none" });

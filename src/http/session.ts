/**
 * `/api/v1/session`: sign in (POST e-mail and password), who am I (GET), sign out (DELETE).
 * The cookie is HttpOnly, SameSite=Lax, Path=/, Secure when the request came over https; the
 * session itself lives in the database (see core/access/sessions.ts). A user with two-factor
 * sign-in gets a ticket for the code step instead of a cookie, unless `code` came along
 * (two-factor.ts takes the ticket).
 */
import { Elysia } from "elysia";
import { signIn } from "../core/access/sign-in";
import { SESSION_COOKIE, endSession, sessionPrincipal, startSession } from "../core/access/sessions";
import { mustEnrol2fa, type UserRow } from "../core/access/users";
import { publicRecord } from "../core/records/output";
import { methodNotAllowed, unauthorized } from "../core/errors";
import type { Site } from "../core/site";
import { cookieValue, crossOriginRefused, isHttps, sameOrigin } from "./auth";
import { handle, type Ctx } from "./context";
import { json } from "./envelope";

export function cookie(request: Request, value: string, maxAge: number): string {
  return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAge}${isHttps(request) ? "; Secure" : ""}`;
}

/** The signed-in user as the API shows any user: password, API flag and tokens never leave. */
async function userBody(site: Site, uuid: string) {
  const row = await site.store.get("users", uuid);
  if (!row) throw unauthorized("not signed in");
  return publicRecord(site.resource("users"), row);
}

/**
 * Starts a session for `user` (ending the one the request came with) and answers as a sign-in does:
 * `{user, session_expires, two_factor_required}` and the cookie. `two_factor_required`: the user's
 * role requires two-factor sign-in and they have not enrolled, so only enrolment is open to them.
 */
export async function signedIn(c: Ctx, user: UserRow): Promise<Response> {
  const raw = cookieValue(c.request, SESSION_COOKIE);
  if (raw) await endSession(c.site, raw);
  const s = await startSession(c.site, user);
  const headers = { "cache-control": "no-store", "set-cookie": cookie(c.request, s.id, c.site.config.sessionTtl) };
  const body = { user: await userBody(c.site, user.uuid), session_expires: Math.floor(s.expires / 1000), two_factor_required: await mustEnrol2fa(c.site, user) };
  return json(200, body, c.t0, headers);
}

async function session(c: Ctx): Promise<Response> {
  const headers: Record<string, string> = { "cache-control": "no-store" };
  const raw = cookieValue(c.request, SESSION_COOKIE);
  switch (c.request.method) {
    case "POST": {
      // Also stops login CSRF: a foreign page cannot sign a visitor in to the attacker's account.
      if (!sameOrigin(c.request)) throw crossOriginRefused();
      const r = await signIn(c.site, await c.json(), { needApi: false });
      // The password was right and a code is due: no cookie until POST /api/v1/session/2fa.
      if (r.ticket !== undefined) return json(200, { two_factor: true, ticket: r.ticket }, c.t0, headers);
      return signedIn(c, r.user);
    }
    case "GET": {
      const p = raw ? await sessionPrincipal(c.site, raw) : null;
      if (!p?.uuid) throw unauthorized("not signed in");
      return json(200, { user: await userBody(c.site, p.uuid), permissions: [...p.permissions], two_factor_required: p.mustEnrol2fa === true }, c.t0, headers);
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

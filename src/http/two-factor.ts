/**
 * Two-factor sign-in (core/access/totp.ts):
 * - `POST /api/v1/session/2fa` `{ticket, code}`: the code step of a sign-in → cookie, as a sign-in;
 * - `POST /api/v1/session/2fa/enrol` `{password}` → `{secret, otpauth_url}`, pending until
 * - `POST /api/v1/session/2fa/confirm` `{code}` → `{enabled: true, recovery_codes}`;
 * - `POST /api/v1/session/2fa/disable` `{password, code}` → `{enabled: false}`;
 * - `POST /api/v1/session/2fa/recovery-codes` `{password, code}` → `{recovery_codes}`;
 * - `DELETE /api/v1/users/{uuid}/2fa` (manage-users) → `{enabled: false}`.
 * Switching it on or off ends the user's sessions and tokens; a caller signed in by session gets a
 * new cookie with the answer.
 */
import { Elysia } from "elysia";
import type { Principal } from "../core/access/permissions";
import { SESSION_COOKIE, endSession, startSession } from "../core/access/sessions";
import { confirm, disable, enrol, redeemTicket, replaceRecoveryCodes, resetTwoFactor } from "../core/access/totp";
import { findUser } from "../core/access/users";
import { methodNotAllowed } from "../core/errors";
import type { Site } from "../core/site";
import { authenticate, cookieValue, crossOriginRefused, sameOrigin } from "./auth";
import { handle, type Ctx } from "./context";
import { json } from "./envelope";
import { cookie, signedIn } from "./session";

const NO_STORE = { "cache-control": "no-store" };

async function body(c: Ctx): Promise<Record<string, unknown>> {
  const b = await c.json();
  return b && typeof b === "object" && !Array.isArray(b) ? (b as Record<string, unknown>) : {};
}

/** The answer to a change that ended the caller's sessions: a session caller is signed in anew. */
async function answer(c: Ctx, p: Principal, value: Record<string, unknown>): Promise<Response> {
  const headers: Record<string, string> = { ...NO_STORE };
  const raw = cookieValue(c.request, SESSION_COOKIE);
  const user = p.viaSession && p.uuid ? await findUser(c.site, p.uuid) : null;
  if (user && raw) {
    await endSession(c.site, raw);
    const s = await startSession(c.site, user);
    headers["set-cookie"] = cookie(c.request, s.id, c.site.config.sessionTtl);
  }
  return json(200, value, c.t0, headers);
}

async function step(c: Ctx, op: string): Promise<Response> {
  if (c.request.method !== "POST") throw methodNotAllowed("POST");
  const site = c.site;
  if (op === "ticket") {
    // Like POST /api/v1/session: a foreign page cannot finish a sign-in into someone's account.
    if (!sameOrigin(c.request)) throw crossOriginRefused();
    const b = await body(c);
    return signedIn(c, await redeemTicket(site, b.ticket, b.code));
  }
  // Enrolment is open to a member who must enrol before anything else.
  const p = await authenticate(site, c.request, { enrolling: op === "enrol" || op === "confirm" });
  c.know(p);
  const b = await body(c);
  switch (op) {
    case "enrol": return json(200, await enrol(site, p, b.password), c.t0, NO_STORE);
    case "confirm": return answer(c, p, await confirm(site, p, b.code));
    case "disable": return answer(c, p, await disable(site, p, b.password, b.code));
    default: return json(200, await replaceRecoveryCodes(site, p, b.password, b.code), c.t0, NO_STORE);
  }
}

async function reset(c: Ctx, uuid: string): Promise<Response> {
  if (c.request.method !== "DELETE") throw methodNotAllowed("DELETE");
  const p = await c.principal();
  const result = await resetTwoFactor(c.site, p, uuid);
  return p.uuid === uuid ? answer(c, p, result) : json(200, result, c.t0, NO_STORE);
}

export const twoFactorRoutes = (site: Site) =>
  new Elysia({ name: "two-factor" })
    .all("/api/v1/session/2fa", ({ request }) => handle(site, request, (c) => step(c, "ticket")), { parse: "none" })
    .all("/api/v1/session/2fa/enrol", ({ request }) => handle(site, request, (c) => step(c, "enrol")), { parse: "none" })
    .all("/api/v1/session/2fa/confirm", ({ request }) => handle(site, request, (c) => step(c, "confirm")), { parse: "none" })
    .all("/api/v1/session/2fa/disable", ({ request }) => handle(site, request, (c) => step(c, "disable")), { parse: "none" })
    .all("/api/v1/session/2fa/recovery-codes", ({ request }) => handle(site, request, (c) => step(c, "recovery-codes")), { parse: "none" })
    .all("/api/v1/users/:uuid/2fa", ({ request, params }) => handle(site, request, (c) => reset(c, params.uuid)), { parse: "none" });

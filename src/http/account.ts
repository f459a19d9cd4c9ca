/**
 * The account flows beyond signing in (docs/accounts.md): one's own password, password reset,
 * e-mail change and invitations, under `/api/v1/session/…`. The work is in src/core/access/account-*.ts.
 */
import { Elysia } from "elysia";
import { confirmEmailChange, requestEmailChange } from "../core/access/account-email";
import { changeOwnPassword } from "../core/access/account-password";
import { confirmReset, invite, requestReset, resendInvitation } from "../core/access/account-reset";
import { ANONYMOUS } from "../core/access/permissions";
import { badRequest, methodNotAllowed, unauthorized } from "../core/errors";
import { publicRecord } from "../core/records/output";
import type { Site } from "../core/site";
import { callerKey } from "./caller";
import { handle, type Ctx } from "./context";
import { json } from "./envelope";
import { signedIn } from "./session";

const NO_STORE = { "cache-control": "no-store" };

async function body(c: Ctx): Promise<Record<string, unknown>> {
  if (c.request.method !== "POST") throw methodNotAllowed("POST");
  const raw = await c.json();
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) throw badRequest("the body must be a JSON object");
  return raw as Record<string, unknown>;
}

const route = (site: Site, path: string, fn: (c: Ctx) => Promise<Response>) =>
  new Elysia({ name: `account ${path}` }).all(path, ({ request }) => handle(site, request, fn), { parse: "none" });

export const accountRoutes = (site: Site) =>
  new Elysia({ name: "account" })
    .use(route(site, "/api/v1/session/password-reset", async (c) => {
      const b = await body(c);
      await requestReset(c.site, b.email, callerKey(c.site, c.request, ANONYMOUS) ?? "anonymous");
      return json(200, { ok: true, details: "if the address has an account, a mail with a link is on its way" }, c.t0, NO_STORE);
    }))
    .use(route(site, "/api/v1/session/password-reset/confirm", async (c) => {
      const b = await body(c);
      const r = await confirmReset(c.site, b.token, b.password);
      return json(200, { ok: true, email: r.email }, c.t0, NO_STORE);
    }))
    .use(route(site, "/api/v1/session/password", async (c) => {
      const b = await body(c);
      const p = await c.principal();
      const user = await changeOwnPassword(c.site, p, b);
      // The old password's sessions ended with it: the page that asked gets a new one.
      if (p.viaSession) return signedIn(c, user);
      return json(200, { ok: true }, c.t0, NO_STORE);
    }))
    .use(route(site, "/api/v1/session/email-change", async (c) => {
      const b = await body(c);
      return json(200, await requestEmailChange(c.site, await c.principal(), b), c.t0, NO_STORE);
    }))
    .use(route(site, "/api/v1/session/email-change/confirm", async (c) => {
      const b = await body(c);
      return json(200, await confirmEmailChange(c.site, b.token), c.t0, NO_STORE);
    }))
    .use(route(site, "/api/v1/session/invitations", async (c) => {
      const b = await body(c);
      const p = await c.principal();
      if (p.kind !== "user") throw unauthorized("inviting needs a signed-in user who may create users");
      if (b.resend !== undefined && typeof b.resend !== "boolean") throw badRequest("`resend` must be true or false");
      const r = b.resend
        ? await resendInvitation(c.site, p, b.email, p.email)
        : await invite(c.site, p, { email: b.email as string, role: b.role, name: b.name }, { mail: true, by: p.email });
      return json(200, { ok: true, user: publicRecord(c.site.resource("users"), r.user) }, c.t0, NO_STORE);
    }));

/**
 * `/api/v1/auth/token`: POST issues a bearer token for e-mail and password (and `code`, for a user
 * with two-factor sign-in), GET renews the token it is called with. `/api/v1/auth/form-key/{resource}`: a fresh key for a form (see forms.ts).
 */
import { Elysia } from "elysia";
import { signIn } from "../core/access/sign-in";
import { issueToken, verifyToken } from "../core/access/tokens";
import { issueFormKey } from "../core/access/forms";
import { methodNotAllowed, unauthorized } from "../core/errors";
import type { Site } from "../core/site";
import { handle, type Ctx } from "./context";
import { json } from "./envelope";

const NO_STORE = { "cache-control": "no-store" };
async function token(c: Ctx): Promise<Response> {
  if (c.request.method === "POST") {
    const { user } = await signIn(c.site, await c.json(), { needApi: true });
    return json(200, { ...(await issueToken(c.site, user!)) }, c.t0, NO_STORE);
  }
  if (c.request.method === "GET") {
    const m = /^Bearer\s+(\S+)$/i.exec(c.request.headers.get("authorization") ?? "");
    if (!m) throw unauthorized("renewing needs the current token in `Authorization: Bearer <token>`");
    return json(200, { ...(await issueToken(c.site, await verifyToken(c.site, m[1]))) }, c.t0, NO_STORE);
  }
  throw methodNotAllowed("GET, POST");
}

function formKey(c: Ctx, resource: string): Response {
  if (c.request.method !== "GET") throw methodNotAllowed("GET");
  c.site.resource(resource);
  return json(200, issueFormKey(c.site, resource), c.t0, NO_STORE);
}

export const tokenRoutes = (site: Site) =>
  new Elysia({ name: "auth-token" })
    .all("/api/v1/auth/token", ({ request }) => handle(site, request, token), { parse: "none" })
    .all("/api/v1/auth/form-key/:resource", ({ request, params }) => handle(site, request, (c) => formKey(c, params.resource)), { parse: "none" });

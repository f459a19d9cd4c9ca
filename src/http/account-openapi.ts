/**
 * The account flows of the OpenAPI document (see openapi-doc.ts and account.ts): password reset
 * and its confirmation for every caller, the e-mail change for signed-in users, invitations for
 * those who may create users. Shapes of src/core/access/account-reset.ts and account-email.ts.
 */
import { can, type Principal } from "../core/access/permissions";

export const ACCOUNT_TAG = "resd:account";
type Schema = Record<string, unknown>;
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const errors = (...codes: number[]) => Object.fromEntries(codes.map((c) => [String(c), { $ref: `#/components/responses/E${c}` }]));
const str = { type: "string" };
const body = (properties: Schema, required: string[]) => ({ required: true, content: { "application/json": { schema: { type: "object", properties, required } } } });
const answer = (description: string, properties: Schema) => ({ description, content: { "application/json": { schema: { allOf: [ref("Envelope"), { type: "object", properties }] } } } });
const ok = { ok: { type: "boolean", enum: [true] } };
const post = (operationId: string, summary: string, requestBody: unknown, responses: Schema, security?: unknown[]) =>
  ({ post: { tags: [ACCOUNT_TAG], operationId, summary, requestBody, responses, ...(security ? { security } : {}) } });

/** Adds the paths `p` may use; true when any was added. */
export function accountPaths(p: Principal, paths: Record<string, unknown>): boolean {
  paths["/api/v1/session/password-reset"] = post("resd:account.password_reset",
    "Ask for a password-reset mail. The answer is the same, and takes the same time, whether the address has an account or not (at most 3 an hour per address, 20 per client: 429); 503 when the site has no mail",
    body({ email: { ...str, format: "email" } }, ["email"]),
    { "200": answer("asked; a mail is on its way if the address has an account", { ...ok, details: str }), ...errors(422, 429, 503) }, []);
  paths["/api/v1/session/password-reset/confirm"] = post("resd:account.password_reset_confirm",
    "Set a new password with the token of a reset or invitation link: once, before it expires, and only while the password it was issued against is unchanged. Ends every session and token of the user and clears a sign-in lock",
    body({ token: { ...str, description: "the `token` parameter of the link" }, password: { ...str, format: "password" } }, ["token", "password"]),
    { "200": answer("the password is set", { ...ok, email: str }), ...errors(400, 422) }, []);
  if (p.kind !== "user") return true;
  paths["/api/v1/session/password"] = post("resd:account.password",
    "Change the signed-in user's own password, giving the current one (counted and locked like sign-in guesses). Every session and token of the user ends; a caller signed in by session gets a new session cookie and the sign-in answer",
    body({ password: { ...str, format: "password", description: "the current password" }, new_password: { ...str, format: "password" } }, ["password", "new_password"]),
    { "200": answer("changed", { ...ok, user: { type: "object" }, session_expires: { type: "integer" } }), ...errors(401, 422, 429) });
  paths["/api/v1/session/email-change"] = post("resd:account.email_change",
    "Ask to change the signed-in user's e-mail address (with the current password): a confirmation link goes to the new address, a notice to the old one; nothing changes before the confirmation. 503 when the site has no mail",
    body({ email: { ...str, format: "email" }, password: { ...str, format: "password" } }, ["email", "password"]),
    { "200": answer("asked", { ...ok, pending: { ...str, description: "the new address, as it will be stored (lower-case)" } }), ...errors(401, 422, 429, 503) });
  paths["/api/v1/session/email-change/confirm"] = post("resd:account.email_change_confirm",
    "Confirm an e-mail change with the token of its link: the address changes, unless another account holds it by now (409)",
    body({ token: str }, ["token"]),
    { "200": answer("the address is changed", { ...ok, email: str }), ...errors(400, 409) }, []);
  if (can(p, "users", "create")) {
    paths["/api/v1/session/invitations"] = post("resd:account.invite",
      "Invite an address: a user without a password, with the role given (no role beyond the caller's own), and a mail with a link to choose one. `resend: true` sends a new link to a user who has not chosen a password yet (the old link dies). 503 when the site has no mail",
      body({ email: { ...str, format: "email" }, role: { ...str, description: "a role's uuid" }, name: str, resend: { type: "boolean" } }, ["email"]),
      { "200": answer("invited", { ...ok, user: { type: "object", description: "the user as GET /api/v1/users/{uuid} returns it" } }), ...errors(401, 403, 404, 409, 422, 503) });
  }
  return true;
}

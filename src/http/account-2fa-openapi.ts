/**
 * Two-factor sign-in and personal API keys in the OpenAPI document (see openapi-doc.ts; the
 * endpoints are two-factor.ts and api-keys.ts, the work src/core/access/totp.ts and api-keys.ts):
 * for a signed-in user or token holder (not for an API key, which manages neither); the keys for
 * users with API access; the reset of someone's two-factor sign-in for holders of manage-users.
 */
import { hasPermission, type Principal } from "../core/access/permissions";
import { MAX_KEYS_PER_USER } from "../core/access/api-keys";
import { TICKET_MS } from "../core/access/totp";

export const TWO_FACTOR_TAG = "resd:2fa";
type Schema = Record<string, unknown>;
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const errors = (...codes: number[]) => Object.fromEntries(codes.map((c) => [String(c), { $ref: `#/components/responses/E${c}` }]));
const error = (description: string) => ({ description, content: { "application/json": { schema: ref("Error") } } });
const answer = (description: string, schema: Schema) => ({ description, content: { "application/json": { schema: { allOf: [ref("Envelope"), schema] } } } });
const body = (properties: Schema, required: string[]) => ({ required: true, content: { "application/json": { schema: { type: "object", properties, required } } } });
const str = { type: "string" };
const secs = (what: string) => ({ type: "integer", description: `${what}, seconds since the epoch` });
const password = { type: "string", format: "password", description: "the caller's password, again" };
const code = { type: "string", maxLength: 64, description: "6 digits from the authenticator app (each usable once)" };
const codeOrRecovery = { ...code, description: "6 digits from the authenticator app, or an unused recovery code" };
const TAGS = [TWO_FACTOR_TAG];

const LOCKED = error("TOO_MANY_REQUESTS (`Retry-After`): too many wrong passwords or codes for this account; it is locked for a while");
const UNAUTHORIZED = error("UNAUTHORIZED: not signed in; INVALID_CREDENTIALS: wrong password, or a wrong or already used code (`two_factor: true`)");
const NOT_BY_KEY = error("ACCESS_DENIED: an API key manages neither two-factor sign-in nor API keys (sign in, or use a bearer token)");

const SCHEMAS: Record<string, Schema> = {
  TwoFactorEnrolment: { type: "object", properties: {
    secret: { ...str, description: "the new secret, base32 (for typing into an app)" },
    otpauth_url: { ...str, description: "otpauth://totp/… (SHA1, 6 digits, 30 s) for a QR code" },
  }, required: ["secret", "otpauth_url"] },
  RecoveryCodes: { type: "object", properties: {
    recovery_codes: { type: "array", items: str, minItems: 10, maxItems: 10, description: "shown this once; each signs in once in place of a code" },
  }, required: ["recovery_codes"] },
  ApiKey: { type: "object", properties: {
    id: str, name: str, created: secs("made"), expires: { ...secs("expires"), nullable: true }, last_used: { ...secs("last used (noted at most once a minute)"), nullable: true },
    permissions: { type: "array", items: str, nullable: true, description: "the key's list (it has those its user's role holds); null: all of the user's rights" },
  }, required: ["id", "name", "created", "expires", "last_used", "permissions"] },
};

/** Switching two-factor sign-in on or off ends every session and token of the user. */
const ENDS = "Every other session and every bearer token of the user ends (a caller signed in by session gets a new cookie with the answer; a token caller signs in again).";

/** The paths of two-factor sign-in and API keys `p` may use, and their schemas; true when any was added. `tokens`: the caller has API access. */
export function twoFactorPaths(p: Principal, paths: Record<string, unknown>, schemas: Record<string, Schema>, tokens: boolean): boolean {
  if (p.kind !== "user" || p.apiKey) return false;
  Object.assign(schemas, SCHEMAS);
  const post = (operationId: string, summary: string, requestBody: unknown, responses: Schema, extra: Schema = {}) =>
    ({ post: { tags: TAGS, operationId, summary, requestBody, responses, ...extra } });
  paths["/api/v1/session/2fa"] = post("resd:2fa.sign_in",
    `The code step of a sign-in: POST /api/v1/session with e-mail and password answers {two_factor: true, ticket} (no cookie) for a user with two-factor sign-in; this signs in with the ticket (valid ${TICKET_MS / 60_000} minutes, once) and a code or recovery code. The answer and cookie are those of POST /api/v1/session. (POST /api/v1/session and /api/v1/auth/token also take \`code\` with e-mail and password.)`,
    body({ ticket: str, code: codeOrRecovery }, ["ticket", "code"]),
    { "200": answer("signed in (cookie resd_session)", { type: "object", properties: { user: { type: "object" }, session_expires: secs("the session expires"), two_factor_required: { type: "boolean" } }, required: ["user", "session_expires"] }),
      ...errors(400), "401": error("UNAUTHORIZED: the ticket is unknown, used or expired; INVALID_CREDENTIALS: a wrong or already used code"), "403": error("ACCESS_DENIED: the request came from another origin"), "429": LOCKED },
    { security: [] });
  paths["/api/v1/session/2fa/enrol"] = post("resd:2fa.enrol",
    "Start enrolling in two-factor sign-in (with the password): a new secret, pending until confirmed (a new enrolment replaces a pending one). Open to members of a role with require_2fa who have not enrolled yet",
    body({ password }, ["password"]),
    { "200": answer("the secret to add to an authenticator app", ref("TwoFactorEnrolment")), ...errors(400), "401": UNAUTHORIZED, "403": NOT_BY_KEY, "409": error("CONFLICT: two-factor sign-in is on already (disable it first)"), "429": LOCKED });
  paths["/api/v1/session/2fa/confirm"] = post("resd:2fa.confirm",
    `Confirm the enrolment with a code from the app: two-factor sign-in is on, with ten recovery codes. ${ENDS}`,
    body({ code }, ["code"]),
    { "200": answer("on", { allOf: [{ type: "object", properties: { enabled: { type: "boolean", enum: [true] } }, required: ["enabled"] }, ref("RecoveryCodes")] }), ...errors(400), "401": UNAUTHORIZED, "403": NOT_BY_KEY, "409": error("CONFLICT: no enrolment is waiting, or it is on already"), "429": LOCKED });
  paths["/api/v1/session/2fa/disable"] = post("resd:2fa.disable",
    `Switch two-factor sign-in off, with the password and a code (or a recovery code). ${ENDS}`,
    body({ password, code: codeOrRecovery }, ["password", "code"]),
    { "200": answer("off", { type: "object", properties: { enabled: { type: "boolean", enum: [false] } }, required: ["enabled"] }), ...errors(400), "401": UNAUTHORIZED, "403": NOT_BY_KEY, "409": error("CONFLICT: two-factor sign-in is not on"), "429": LOCKED });
  paths["/api/v1/session/2fa/recovery-codes"] = post("resd:2fa.recovery_codes",
    "Ten new recovery codes, with the password and a code (or a recovery code); the old ones stop working",
    body({ password, code: codeOrRecovery }, ["password", "code"]),
    { "200": answer("the new codes", ref("RecoveryCodes")), ...errors(400), "401": UNAUTHORIZED, "403": NOT_BY_KEY, "409": error("CONFLICT: two-factor sign-in is not on"), "429": LOCKED });
  if (tokens) {
    paths["/api/v1/session/api-keys"] = {
      get: { tags: TAGS, operationId: "resd:api_keys.list", summary: "The caller's personal API keys (never the keys themselves), oldest first",
        responses: { "200": answer("the keys", { type: "object", properties: { keys: { type: "array", items: ref("ApiKey") } }, required: ["keys"] }), ...errors(401), "403": NOT_BY_KEY } },
      post: { tags: TAGS, operationId: "resd:api_keys.create",
        summary: `Make a personal API key (with the password): a bearer credential \`resd_<id>_<secret>\` for scripts and CI, shown this once. It needs no second factor, acts with the user's rights as they are at each request (or only the listed permissions the role holds), and dies when revoked, expired, or API access is switched off. At most ${MAX_KEYS_PER_USER} per user`,
        requestBody: body({
          name: { type: "string", minLength: 1, maxLength: 100 }, password,
          expires_in_days: { type: "number", exclusiveMinimum: true, minimum: 0, maximum: 3650, description: "fractions allowed; without it the key does not expire" },
          permissions: { type: "array", items: str, minItems: 1, maxItems: 100, description: "permissions the caller's role holds; without it all of the user's rights" },
        }, ["name", "password"]),
        responses: { "201": answer("the key", { allOf: [ref("ApiKey"), { type: "object", properties: { key: { ...str, description: "the key itself: shown this once" } }, required: ["key"] }] }),
          ...errors(400), "401": UNAUTHORIZED, "403": error("ACCESS_DENIED: the user has no API access, or the request came with an API key"),
          "409": error(`CONFLICT: the user has ${MAX_KEYS_PER_USER} keys already`), "422": error("INVALID_DATA: name, expires_in_days or permissions (one the role does not hold) is invalid (`errors`)"), "429": LOCKED } },
    };
    paths["/api/v1/session/api-keys/{id}"] = {
      parameters: [{ name: "id", in: "path", required: true, schema: str }],
      delete: { tags: TAGS, operationId: "resd:api_keys.revoke", summary: "Revoke one of the caller's API keys: it stops working at once",
        responses: { "200": answer("revoked", { type: "object", properties: { ok: { type: "boolean", enum: [true] } }, required: ["ok"] }), ...errors(401), "403": NOT_BY_KEY, "404": error("RESOURCE_NOT_FOUND: the caller has no key of this id") } },
    };
  }
  if (hasPermission(p, "manage-users")) {
    paths["/api/v1/users/{uuid}/2fa"] = {
      parameters: [{ name: "uuid", in: "path", required: true, schema: str }],
      delete: { tags: TAGS, operationId: "resd:2fa.reset", summary: `Switch someone's two-factor sign-in off (a lost phone): needs manage-users and every permission of that user's role. ${ENDS.replace("other ", "")}`,
        responses: { "200": answer("off", { type: "object", properties: { enabled: { type: "boolean", enum: [false] } }, required: ["enabled"] }), ...errors(401, 403, 404) } },
    };
  }
  return true;
}

/**
 * The one guard of every write to `users` and `roles`, whatever the route (API create, update,
 * bulk PUT, PATCH, restore, delete, delete-all, HTTP and CLI import). The record writers call it
 * inside the write transaction, so the decision rests on the state the write will change — the
 * caller's own role as it is now, the target's current role — and not on what was true when the
 * request started (a held request body cannot outwait a rename or a revocation).
 *
 * The rule: nobody changes a user or a role that can do more than they can, and nobody gives more
 * than they have. In detail:
 * - the built-in role (uuid `admin`) can be neither renamed, deleted nor stripped of `(all)`;
 * - creating, renaming, re-permissioning or deleting a role needs every permission the role has and
 *   will have;
 * - creating, changing, restoring or deleting a user needs every permission of that user's current
 *   role and of the role it will have; switching API access on needs `edit-users` (never on one's
 *   own record);
 * - on their own record a user without `edit-users` changes only the `self_edit` fields.
 */
import type { Site } from "../site";
import type { ResourceDef } from "../definitions/types";
import { AppError, denied, unauthorized } from "../errors";
import type { StoreTx } from "../store/types";
import { authorize, can, grantingPatterns, type Action, type Principal } from "./permissions";
import { ADMIN_ROLE, ALL, hasTwoFactor, permissionsOfRoleRow, withAnonymousAllows } from "./users";
import { scopeToKey } from "./key-scope";

export const ACCOUNT_RESOURCES = new Set(["users", "roles"]);

type Values = Record<string, unknown>;

/** One write as the guard sees it; `before`/`after` are null for a create/delete. */
export type AccountWrite = {
  uuid: string;
  before: Values | null;
  after: Values | null;
  /** The permissions the route needs (create, edit, import, delete…), checked again here. */
  via: readonly Action[];
};

export const selfEditFields = (def: ResourceDef): string[] =>
  String(def.raw.self_edit ?? "name").split(",").map((s) => s.trim()).filter(Boolean);

/**
 * The caller as the database says now: their current role's permissions plus the anonymous allows
 * (an API key limited to a list: the listed ones the role holds).
 */
async function currentCaller(site: Site, tx: StoreTx, p: Principal): Promise<Principal> {
  if (p.kind !== "user" || !p.uuid) return p;
  const row = await tx.get("users", p.uuid);
  if (!row) throw unauthorized("the signed-in user no longer exists");
  const role = (JSON.parse(row.data) as { role?: unknown }).role;
  const roleUuid = typeof role === "string" ? role : "";
  const perms = roleUuid ? permissionsOfRoleRow(roleUuid, await tx.get("roles", roleUuid)) : new Set<string>();
  const list = p.apiKey?.permissions ?? null;
  const own = list ? scopeToKey(perms, list, p.resources) : perms;
  return { ...p, role: list ? null : roleUuid || null, permissions: withAnonymousAllows(site, own) };
}

/** Does the caller hold this permission, literally or through what it grants? */
function holds(p: Principal, perm: string): boolean {
  if (p.permissions.has(ALL) || p.permissions.has(perm)) return true;
  const canonical = /^(view|create|edit|delete|import|export)-(.+)$/.exec(perm);
  return canonical !== null && can(p, canonical[2], canonical[1] as Action);
}

function requireAll(p: Principal, perms: Iterable<string>, what: string): void {
  const missing = [...new Set(perms)].filter((perm) => !holds(p, perm));
  if (missing.length) {
    throw new AppError(403, "ACCESS_DENIED", `${what} holds permissions you do not have (${missing.slice(0, 5).join(", ")}); nobody changes or hands out more than they hold`, { needs: missing.slice(0, 20) });
  }
}

const listOf = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : v === undefined || v === null || v === "" ? [] : [String(v)]);
const sameList = (a: unknown, b: unknown) => JSON.stringify(listOf(a)) === JSON.stringify(listOf(b));

async function rolePerms(tx: StoreTx, role: unknown): Promise<Set<string>> {
  if (typeof role !== "string" || role === "") return new Set();
  return permissionsOfRoleRow(role, await tx.get("roles", role));
}

function guardRole(caller: Principal, w: AccountWrite): void {
  const { before, after } = w;
  if (w.uuid === ADMIN_ROLE) {
    if (!after) throw new AppError(403, "ACCESS_DENIED", "the built-in admin role cannot be deleted");
    if (after.name !== ADMIN_ROLE) throw new AppError(403, "ACCESS_DENIED", "the built-in admin role cannot be renamed");
    if (!listOf(after.permissions).includes(ALL)) throw new AppError(403, "ACCESS_DENIED", "the built-in admin role always holds (all)");
  }
  const changesPower = !before || !after || before.name !== after.name || !sameList(before.permissions, after.permissions);
  if (!changesPower) return;
  const perms = [...listOf(before?.permissions), ...listOf(after?.permissions)];
  if (w.uuid === ADMIN_ROLE) perms.push(ALL);
  requireAll(caller, perms, `role "${String(after?.name ?? before?.name ?? w.uuid)}"`);
}

async function guardUser(site: Site, tx: StoreTx, def: ResourceDef, caller: Principal, w: AccountWrite): Promise<void> {
  const { before, after } = w;
  const own = caller.kind === "user" && caller.uuid === w.uuid;
  const selfEdit = own && before !== null && after !== null && !can(caller, "users", "edit", w.uuid);
  if (selfEdit) {
    const allowed = new Set(selfEditFields(def));
    const changed = Object.keys({ ...before, ...after }).filter((f) => JSON.stringify(before[f]) !== JSON.stringify(after[f]));
    const refused = changed.filter((f) => !allowed.has(f));
    if (refused.length) {
      throw denied(grantingPatterns("users", "edit", w.uuid, caller.resources), `on your own record you may change only: ${[...allowed].join(", ") || "nothing"} (not ${refused.join(", ")})`);
    }
  } else if (before) {
    requireAll(caller, await rolePerms(tx, before.role), "this user's role");
  }
  if (after && after.role !== before?.role) requireAll(caller, await rolePerms(tx, after.role), "the role given");
  if (after?.api === true && before?.api !== true) {
    if (own) throw new AppError(403, "ACCESS_DENIED", "nobody switches on their own API access");
    if (!can(caller, "users", "edit")) throw denied(grantingPatterns("users", "edit", undefined, caller.resources), "switching on API access needs a role that may edit users");
  }
}

/**
 * A bearer token carries a fingerprint of its user's password hash and `token_epoch` (tokens.ts).
 * The epoch is new when a user is created (a restored deleted user included) and whenever API
 * access or the password changes, so every token issued before dies for good: switching API access
 * off and on again does not revive them. No writer sets it otherwise: an old value brought back by
 * a restore or an import is replaced by the one in force.
 */
function stampTokenEpoch(w: AccountWrite): void {
  const { before, after } = w;
  if (!after) return;
  if (!before || before.api !== after.api || before.password !== after.password) after.token_epoch = crypto.randomUUID();
  else if (before.token_epoch === undefined) delete after.token_epoch;
  else after.token_epoch = before.token_epoch;
  // API keys carry the `api_epoch` of their user (api-keys.ts): new whenever API access is switched,
  // so a key dies with the access and stays dead when it is switched on again.
  if (!before || before.api !== after.api) after.api_epoch = crypto.randomUUID();
  else keep(before, after, "api_epoch");
}

/**
 * Two-factor sign-in (totp.ts) is written by resd alone: no write through the API, an import or a
 * restore sets or clears it, and `two_factor` says what is stored. The session epoch (sessions.ts)
 * changes only with it. A created user (a restored deleted one included) starts without.
 */
function stampTwoFactor(w: AccountWrite): void {
  const { before, after } = w;
  if (!after) return;
  keep(before, after, "totp");
  keep(before, after, "session_epoch");
  after.two_factor = hasTwoFactor(after);
}

function keep(before: Values | null, after: Values, key: string): void {
  if (before?.[key] === undefined) delete after[key];
  else after[key] = before[key];
}

/** Throws 403 unless the caller may make this write to `users` or `roles` now. */
export async function guardAccountWrite(site: Site, tx: StoreTx, p: Principal, def: ResourceDef, w: AccountWrite): Promise<void> {
  if (!ACCOUNT_RESOURCES.has(def.name)) return;
  const caller = await currentCaller(site, tx, p);
  // A user's edit of their own record is judged by the self_edit rule instead of edit-users; an API
  // key limited to a list has no such right of its own (edit-users must be on its list).
  const own = def.name === "users" && caller.kind === "user" && caller.uuid === w.uuid && w.before !== null && w.after !== null && !caller.apiKey?.permissions;
  if (!own) for (const action of w.via) authorize(caller, def.name, action, action === "create" || action === "import" ? undefined : w.uuid);
  if (def.name === "roles") return guardRole(caller, w);
  await guardUser(site, tx, def, caller, w);
  stampTokenEpoch(w);
  stampTwoFactor(w);
}

/**
 * May `p` change this user under the rule above? For the changes resd writes itself (resetting
 * someone's two-factor sign-in): edit-users on that user and every permission of the user's role.
 */
export async function guardUserChange(site: Site, tx: StoreTx, p: Principal, uuid: string, user: Values): Promise<void> {
  const caller = await currentCaller(site, tx, p);
  authorize(caller, "users", "edit", uuid);
  requireAll(caller, await rolePerms(tx, user.role), "this user's role");
}

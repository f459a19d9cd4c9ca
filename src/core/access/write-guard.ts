/**
 * Who may write which fields: the record service calls `guardWrite` before every create and update.
 * Besides the permission check it applies the rules of the `users` resource:
 * - a user without `edit-users` (or `manage-users`, legacy equivalents, admin) may update only their
 *   own record, and only the fields named in `self_edit` (default `name`);
 * - a role may be given only if the caller holds every permission of that role — so nobody raises
 *   their own role, and nobody hands out more than they have;
 * - API access may be switched on only by a caller who may edit users, and never on their own record;
 * - a role's permissions may be set only to permissions the caller holds, so `edit-roles` is not a
 *   way to make oneself admin.
 * It also checks and removes the form spam fields (see forms.ts).
 */
import type { Site } from "../site";
import type { ResourceDef } from "../definitions/types";
import { isSystemField } from "../definitions/types";
import { AppError, denied } from "../errors";
import { asObject, type Values } from "../records/prepare";
import { authorize, can, grantingPatterns, type Principal } from "./permissions";
import { stripFormFields } from "./forms";
import { findUser, rolePermissions } from "./users";

export type WriteAction = "create" | "edit";

export const selfEditFields = (def: ResourceDef): string[] =>
  String(def.raw.self_edit ?? "name").split(",").map((s) => s.trim()).filter(Boolean);

/** Authorizes a create or update of one record and returns the body to validate. */
export async function guardWrite(site: Site, p: Principal, def: ResourceDef, action: WriteAction, body: unknown, uuid?: string): Promise<Values> {
  const ownRecord = def.name === "users" && p.kind === "user" && uuid !== undefined && uuid === p.uuid;
  const selfEdit = ownRecord && action === "edit" && !can(p, "users", "edit", uuid);
  if (!selfEdit) authorize(p, def.name, action, uuid);
  const input = stripFormFields(site, def.name, asObject(body));
  if (def.name === "roles") guardPermissions(p, input.permissions);
  if (def.name !== "users") return input;
  if (selfEdit) {
    const allowed = new Set(selfEditFields(def));
    const refused = Object.keys(input).filter((f) => !isSystemField(f) && !allowed.has(f));
    if (refused.length) {
      throw denied(grantingPatterns("users", "edit", uuid), `on your own record you may change only: ${[...allowed].join(", ") || "nothing"} (not ${refused.join(", ")})`);
    }
  }
  await guardRole(site, p, input.role);
  if (input.api === true) {
    const current = uuid !== undefined && action === "edit" ? await findUser(site, uuid) : null;
    if (current?.api !== true) {
      if (ownRecord) throw new AppError(403, "ACCESS_DENIED", "nobody switches on their own API access");
      if (!can(p, "users", "edit")) throw denied(grantingPatterns("users", "edit"), "switching on API access needs a role that may edit users");
    }
  }
  return input;
}

async function guardRole(site: Site, p: Principal, role: unknown): Promise<void> {
  if (role === undefined || role === null || role === "" || p.permissions.has("(all)")) return;
  const wanted = await rolePermissions(site, String(role));
  const missing = [...wanted].filter((perm) => !p.permissions.has(perm));
  if (missing.length) {
    throw new AppError(403, "ACCESS_DENIED", `role "${role}" holds permissions you do not have (${missing.slice(0, 5).join(", ")}); nobody gives a role above their own`);
  }
}

function guardPermissions(p: Principal, permissions: unknown): void {
  if (permissions === undefined || permissions === null || p.permissions.has("(all)")) return;
  const list = (Array.isArray(permissions) ? permissions : [permissions]).map(String);
  const missing = list.filter((perm) => !p.permissions.has(perm));
  if (missing.length) {
    throw new AppError(403, "ACCESS_DENIED", `a role may hold only permissions you hold yourself (not ${missing.slice(0, 5).join(", ")})`);
  }
}

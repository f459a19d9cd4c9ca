/**
 * What a personal API key limited to a list of permissions may do (api-keys.ts): each listed
 * permission its user's role holds, and nothing else. Read again on every request, so a role that
 * loses a permission takes it from its members' keys at once. A leaf module: the account guard
 * applies the same limit when it re-reads a caller's role inside a write.
 */
import { ALL } from "./users";
import { can, type Action, type KnownResources } from "./permissions";

const CANONICAL = /^(view|create|edit|delete|import|export|manage)-(.+)$/;
const ACTIONS: readonly Action[] = ["view", "create", "edit", "delete", "import", "export"];

/**
 * Does a role with these permissions hold `perm`: literally, through `(all)`, or — for a canonical
 * `action-R` (or `manage-R`, every action) — through anything that grants it (`manage-R`, `api_(any)_R`…)?
 */
export function roleHolds(perms: ReadonlySet<string>, perm: string, known?: KnownResources): boolean {
  if (perms.has(ALL) || perms.has(perm)) return true;
  const m = CANONICAL.exec(perm);
  if (!m) return false;
  const p = { kind: "user" as const, uuid: null, email: null, role: null, permissions: perms, resources: known };
  return m[1] === "manage" ? ACTIONS.every((a) => can(p, m[2], a)) : can(p, m[2], m[1] as Action);
}

/** The permissions of a key: the role's own when the key names none, else the listed ones the role holds. */
export function scopeToKey(rolePerms: ReadonlySet<string>, list: readonly string[] | null, known?: KnownResources): Set<string> {
  if (list === null) return new Set(rolePerms);
  return new Set(list.filter((perm) => roleHolds(rolePerms, perm, known)));
}

/** Users and roles as the access layer sees them, cached until either resource changes. */
import type { Site } from "../site";
import type { StoredRecord } from "../store/types";
import { anonymousPrincipal } from "./anonymous";
import type { Principal } from "./permissions";

export type UserRow = { uuid: string; email: string; name?: string; password?: string; role?: string; api?: boolean; [k: string]: unknown };

/**
 * The built-in role's fixed uuid. A user's `role` holds a role's uuid, never its name: a role can be
 * renamed without changing who holds what, and no rename can make another role the admin role.
 */
export const ADMIN_ROLE = "admin";
export const ALL = "(all)";

const parseUser = (row: StoredRecord): UserRow => ({ ...(JSON.parse(row.data) as Omit<UserRow, "uuid">), uuid: row.uuid }) as UserRow;

export async function findUserByEmail(site: Site, email: string): Promise<UserRow | null> {
  const row = await site.store.findBy("users", "email", email.trim().toLowerCase());
  return row ? parseUser(row) : null;
}

export async function findUser(site: Site, uuid: string): Promise<UserRow | null> {
  const row = await site.store.get("users", uuid);
  return row ? parseUser(row) : null;
}

/** The permissions stored in a role row; the admin role holds `(all)` whatever its row says. */
export function permissionsOfRoleRow(uuid: string, row: StoredRecord | null): Set<string> {
  if (uuid === ADMIN_ROLE) return new Set([ALL]);
  const data = row ? (JSON.parse(row.data) as { permissions?: unknown }) : null;
  return new Set(Array.isArray(data?.permissions) ? (data.permissions as unknown[]).map(String) : []);
}

type RoleCache = { version: number; byUuid: Map<string, Set<string>> };
const roleCaches = new WeakMap<Site, RoleCache>();

/** Permissions of the role with this uuid (empty for no role or an unknown one). */
export async function rolePermissions(site: Site, role: string | undefined | null): Promise<Set<string>> {
  if (!role) return new Set();
  if (role === ADMIN_ROLE) return new Set([ALL]);
  const version = await site.store.lastChange("roles");
  let cache = roleCaches.get(site);
  if (!cache || cache.version !== version) {
    cache = { version, byUuid: new Map() };
    roleCaches.set(site, cache);
  }
  let perms = cache.byUuid.get(role);
  if (!perms) {
    perms = permissionsOfRoleRow(role, await site.store.get("roles", role));
    cache.byUuid.set(role, perms);
  }
  return perms;
}

/** A signed-in caller may do what their role allows plus whatever anonymous visitors may do. */
export function withAnonymousAllows(site: Site, perms: ReadonlySet<string>): Set<string> {
  const out = new Set(perms);
  for (const p of anonymousPrincipal(site).permissions) out.add(p);
  return out;
}

export async function principalForUser(site: Site, user: UserRow, viaSession = false): Promise<Principal> {
  return {
    kind: "user",
    uuid: user.uuid,
    email: user.email,
    role: user.role ?? null,
    permissions: withAnonymousAllows(site, await rolePermissions(site, user.role)),
    viaSession,
    resources: site.defs,
  };
}

/** Users and roles as the access layer sees them, cached until either resource changes. */
import type { Site } from "../site";
import type { StoredRecord } from "../store/types";
import type { Principal } from "./permissions";

export type UserRow = { uuid: string; email: string; name?: string; password?: string; role?: string; api?: boolean; [k: string]: unknown };

export const ADMIN_ROLE = "admin";

const parseUser = (row: StoredRecord): UserRow => ({ ...(JSON.parse(row.data) as Omit<UserRow, "uuid">), uuid: row.uuid }) as UserRow;

export async function findUserByEmail(site: Site, email: string): Promise<UserRow | null> {
  const row = await site.store.findBy("users", "email", email.trim().toLowerCase());
  return row ? parseUser(row) : null;
}

export async function findUser(site: Site, uuid: string): Promise<UserRow | null> {
  const row = await site.store.get("users", uuid);
  return row ? parseUser(row) : null;
}

type RoleCache = { version: number; byKey: Map<string, Set<string>> };
const roleCaches = new WeakMap<Site, RoleCache>();

/** Permissions of a role named by its `name` or uuid. `admin` always holds `(all)`. */
export async function rolePermissions(site: Site, role: string | undefined | null): Promise<Set<string>> {
  if (!role) return new Set();
  if (role === ADMIN_ROLE) return new Set(["(all)"]);
  const version = await site.store.lastChange("roles");
  let cache = roleCaches.get(site);
  if (!cache || cache.version !== version) {
    cache = { version, byKey: new Map() };
    roleCaches.set(site, cache);
  }
  const hit = cache.byKey.get(role);
  if (hit) return hit;
  const row = (await site.store.get("roles", role)) ?? (await site.store.findBy("roles", "name", role));
  const data = row ? (JSON.parse(row.data) as { name?: string; permissions?: unknown }) : null;
  const perms = new Set<string>(
    data?.name === ADMIN_ROLE ? ["(all)"] : Array.isArray(data?.permissions) ? (data.permissions as unknown[]).map(String) : [],
  );
  cache.byKey.set(role, perms);
  return perms;
}

export async function principalForUser(site: Site, user: UserRow, viaSession = false): Promise<Principal> {
  return {
    kind: "user",
    uuid: user.uuid,
    email: user.email,
    role: user.role ?? null,
    permissions: await rolePermissions(site, user.role),
    viaSession,
  };
}

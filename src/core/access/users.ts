/** Users and roles as the access layer sees them, cached until either resource changes. */
import type { Site } from "../site";
import type { StoredRecord } from "../store/types";
import { anonymousPrincipal } from "./anonymous";
import type { Principal } from "./permissions";
import { AppError } from "../errors";

export type UserRow = { uuid: string; email: string; name?: string; password?: string; role?: string; api?: boolean; [k: string]: unknown };

/**
 * The built-in role's fixed uuid. A user's `role` holds a role's uuid, never its name: a role can be
 * renamed without changing who holds what, and no rename can make another role the admin role.
 */
export const ADMIN_ROLE = "admin";
export const ALL = "(all)";

export const parseUser = (row: StoredRecord): UserRow => ({ ...(JSON.parse(row.data) as Omit<UserRow, "uuid">), uuid: row.uuid }) as UserRow;

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

/** Does this stored user have two-factor sign-in (core/access/totp.ts) switched on? */
export function hasTwoFactor(user: Record<string, unknown>): boolean {
  const t = user.totp;
  return t !== null && typeof t === "object" && (t as { enabled?: unknown }).enabled === true;
}

type RoleCache = { version: number; byUuid: Map<string, Set<string>>; requires2fa: Map<string, boolean> };
const roleCaches = new WeakMap<Site, RoleCache>();

/** Permissions of the role with this uuid (empty for no role or an unknown one). */
export async function rolePermissions(site: Site, role: string | undefined | null): Promise<Set<string>> {
  if (!role) return new Set();
  if (role === ADMIN_ROLE) return new Set([ALL]);
  const version = await site.store.lastChange("roles");
  const cache = roleCache(site, version);
  let perms = cache.byUuid.get(role);
  if (!perms) {
    perms = permissionsOfRoleRow(role, await site.store.get("roles", role));
    cache.byUuid.set(role, perms);
  }
  return perms;
}

function roleCache(site: Site, version: number): RoleCache {
  let cache = roleCaches.get(site);
  if (!cache || cache.version !== version) {
    cache = { version, byUuid: new Map(), requires2fa: new Map() };
    roleCaches.set(site, cache);
  }
  return cache;
}

/** Does the role with this uuid ask its members for two-factor sign-in (`require_2fa`)? */
export async function roleRequires2fa(site: Site, role: string | undefined | null): Promise<boolean> {
  if (!role) return false;
  const cache = roleCache(site, await site.store.lastChange("roles"));
  let requires = cache.requires2fa.get(role);
  if (requires === undefined) {
    const row = await site.store.get("roles", role);
    requires = row !== null && (JSON.parse(row.data) as { require_2fa?: unknown }).require_2fa === true;
    cache.requires2fa.set(role, requires);
  }
  return requires;
}

/** A member of a role that requires two-factor sign-in who has not enrolled: only enrolment is open to them. */
export async function mustEnrol2fa(site: Site, user: UserRow): Promise<boolean> {
  return !hasTwoFactor(user) && (await roleRequires2fa(site, user.role));
}

/** 403 for a member who must enrol in two-factor sign-in first; `needs` names "2fa". */
export const enrolFirst = () =>
  new AppError(403, "ACCESS_DENIED", "your role requires two-factor sign-in: enrol first (POST /api/v1/session/2fa/enrol, then /api/v1/session/2fa/confirm)", { needs: ["2fa"] });

/** A signed-in caller may do what their role allows plus whatever anonymous visitors may do. */
export function withAnonymousAllows(site: Site, perms: ReadonlySet<string>): Set<string> {
  const out = new Set(perms);
  for (const p of anonymousPrincipal(site).permissions) out.add(p);
  return out;
}

export async function principalForUser(site: Site, user: UserRow, viaSession = false): Promise<Principal> {
  const p: Principal = {
    kind: "user",
    uuid: user.uuid,
    email: user.email,
    role: user.role ?? null,
    permissions: withAnonymousAllows(site, await rolePermissions(site, user.role)),
    viaSession,
    resources: site.defs,
  };
  if (await mustEnrol2fa(site, user)) p.mustEnrol2fa = true;
  return p;
}

/**
 * Account administration shared by the CLI and library code (the HTTP API uses the record service).
 * It writes users and roles through the record service, like any writer, so it sits above both
 * records and access (which never import it).
 */
import type { Site } from "./site";
import { AppError, notFound } from "./errors";
import { SYSTEM, type Principal } from "./access/permissions";
import { createRecord, deleteRecord, updateRecord } from "./records/service";
import { publicRecord } from "./records/output";
import { findUserByEmail, ADMIN_ROLE, ALL } from "./access/users";
import type { CompiledQuery, StoredRecord } from "./store/types";
import { issueToken, type IssuedToken } from "./access/tokens";

const everyRow: CompiledQuery = { where: "", args: [], orderBy: "ORDER BY id", limit: null, offset: 0 };

/**
 * Brings accounts up to the current model at every start (and `resd migrate`):
 * 1. users that name their role (sites before roles were referenced by uuid) get the role's uuid —
 *    resolved by the names as they are now, before anything is renamed;
 * 2. the built-in role is found by its fixed uuid and repaired: named `admin`, holding `(all)`. A
 *    role of another uuid that took the name `admin` is renamed out of the way (never the reverse);
 * 3. users written before two-factor sign-in existed get `two_factor: false` (access/totp.ts).
 */
export async function ensureAccounts(site: Site): Promise<{ usersMigrated: number; adminRepaired: boolean }> {
  const roles = new Map<string, string>(); // name -> uuid
  const uuids = new Set<string>();
  for await (const row of site.store.stream("roles", everyRow)) {
    uuids.add(row.uuid);
    const name = (JSON.parse(row.data) as { name?: unknown }).name;
    if (typeof name === "string" && !roles.has(name)) roles.set(name, row.uuid);
  }
  const now = Math.floor(Date.now() / 1000);
  const stale: StoredRecord[] = [];
  const unmarked: StoredRecord[] = [];
  for await (const row of site.store.stream("users", everyRow)) {
    const { role, two_factor } = JSON.parse(row.data) as { role?: unknown; two_factor?: unknown };
    if (typeof role === "string" && role !== "" && !uuids.has(role) && roles.has(role)) stale.push(row);
    else if (typeof two_factor !== "boolean") unmarked.push(row);
  }
  const admin = await site.store.get("roles", ADMIN_ROLE);
  const want = JSON.stringify({ ...(admin ? (JSON.parse(admin.data) as object) : {}), name: ADMIN_ROLE, permissions: [ALL] });
  const impostor = roles.get(ADMIN_ROLE);
  const adminRepaired = !admin || admin.data !== want || (impostor !== undefined && impostor !== ADMIN_ROLE);
  if (!stale.length && !unmarked.length && !adminRepaired) return { usersMigrated: 0, adminRepaired: false };
  await site.store.transaction(async (tx) => {
    for (const row of stale) {
      const data = JSON.parse(row.data) as { role: string; two_factor?: unknown };
      await tx.update("users", { ...row, data: JSON.stringify({ ...data, role: roles.get(data.role), two_factor: data.two_factor === true }), _modified: now });
    }
    // Not a change anyone made: `_modified` stays.
    for (const row of unmarked) await tx.update("users", { ...row, data: JSON.stringify({ ...(JSON.parse(row.data) as object), two_factor: false }) });
    if (impostor !== undefined && impostor !== ADMIN_ROLE) {
      const other = (await tx.get("roles", impostor))!;
      const renamed = `admin-${impostor.slice(0, 8)}`;
      await tx.update("roles", { ...other, data: JSON.stringify({ ...(JSON.parse(other.data) as object), name: renamed }), _modified: now });
      console.error(`resd: role ${impostor} was named "admin" but is not the built-in admin role; renamed it "${renamed}"`);
    }
    if (admin) {
      if (admin.data !== want) await tx.update("roles", { ...admin, data: want, _modified: now });
    } else {
      await tx.insert("roles", { uuid: ADMIN_ROLE, data: want, _created: now, _modified: now, _created_by: null, _modified_by: null });
    }
  });
  return { usersMigrated: stale.length, adminRepaired };
}

export type NewUser = { email: string; password: string; role?: string; name?: string; api?: boolean };

export async function addUser(site: Site, u: NewUser, by: Principal = SYSTEM) {
  const body: Record<string, unknown> = { email: u.email, password: u.password, api: u.api === true };
  if (u.role) body.role = u.role;
  if (u.name) body.name = u.name;
  const { def, row } = await createRecord(site, by, "users", body);
  return publicRecord(def, row);
}

async function userUuid(site: Site, email: string): Promise<string> {
  const user = await findUserByEmail(site, email);
  if (!user) throw notFound(`no user with e-mail ${email}`);
  return user.uuid;
}

/** `role` is the role's uuid as stored; `role_name` its current name (null when the role is gone). */
export type UserSummary = { uuid: string; email: string; name: string | null; role: string | null; role_name: string | null; api: boolean };

export async function listUsers(site: Site): Promise<UserSummary[]> {
  const names = new Map((await listRoles(site)).map((r) => [r.uuid, r.name]));
  const out: UserSummary[] = [];
  for await (const row of site.store.stream("users", everyRow)) {
    const d = JSON.parse(row.data) as { email?: string; name?: string; role?: string; api?: boolean };
    const role = d.role ?? null;
    out.push({ uuid: row.uuid, email: d.email ?? "", name: d.name ?? null, role, role_name: role === null ? null : names.get(role) ?? null, api: d.api === true });
  }
  return out;
}

export async function setPassword(site: Site, email: string, password: string) {
  if (!password) throw new AppError(400, "INVALID_DATA", "the password must not be empty");
  await updateRecord(site, SYSTEM, "users", await userUuid(site, email), { password });
}

export async function setApiAccess(site: Site, email: string, on: boolean) {
  await updateRecord(site, SYSTEM, "users", await userUuid(site, email), { api: on });
}

export async function removeUser(site: Site, email: string) {
  await deleteRecord(site, SYSTEM, "users", await userUuid(site, email));
}

export async function tokenForEmail(site: Site, email: string): Promise<IssuedToken> {
  const user = await findUserByEmail(site, email);
  if (!user) throw notFound(`no user with e-mail ${email}`);
  if (user.api !== true) throw new AppError(403, "ACCESS_DENIED", `${email} has no API access (switch it on with: resd user api ${email} --on)`);
  return issueToken(site, user);
}

export type RoleSummary = { uuid: string; name: string; permissions: string[] };

const roleSummary = (row: StoredRecord): RoleSummary => {
  const d = JSON.parse(row.data) as { name?: string; permissions?: string[] };
  return { uuid: row.uuid, name: d.name ?? "", permissions: d.permissions ?? [] };
};

export async function listRoles(site: Site): Promise<RoleSummary[]> {
  const out: RoleSummary[] = [];
  for await (const row of site.store.stream("roles", everyRow)) out.push(roleSummary(row));
  return out;
}

/** The role of this name (names are unique), or null. */
export async function findRole(site: Site, name: string): Promise<RoleSummary | null> {
  const row = await site.store.findBy("roles", "name", name);
  return row ? roleSummary(row) : null;
}

/** A role by name, or by uuid. */
async function roleByName(site: Site, name: string) {
  const row = (await site.store.findBy("roles", "name", name)) ?? (await site.store.get("roles", name));
  if (!row) throw notFound(`no role named ${name}`);
  return row;
}

/** Creates a role; the same account guard as an API write decides (SYSTEM may do anything). */
export async function addRole(site: Site, name: string, permissions: string[], by: Principal = SYSTEM): Promise<RoleSummary> {
  const { row } = await createRecord(site, by, "roles", { name, permissions });
  return roleSummary(row);
}

/** Replaces a role's permissions (its users' tokens and sessions follow at once). */
export async function setRolePermissions(site: Site, name: string, permissions: string[], by: Principal = SYSTEM): Promise<RoleSummary> {
  const { row } = await updateRecord(site, by, "roles", (await roleByName(site, name)).uuid, { permissions });
  return roleSummary(row);
}

/** Users holding the role (by uuid). */
export async function roleHolders(site: Site, name: string): Promise<UserSummary[]> {
  const uuid = (await roleByName(site, name)).uuid;
  return (await listUsers(site)).filter((u) => u.role === uuid);
}

export async function removeRole(site: Site, name: string, by: Principal = SYSTEM): Promise<void> {
  await deleteRecord(site, by, "roles", (await roleByName(site, name)).uuid);
}

const RESOURCE_PERMISSION = /^(view|create|edit|delete|import|export|manage)-(.+)$/;

/** Permissions that name a resource this site does not have (most likely a typo); they grant nothing today. */
export function unknownResourcePermissions(site: Site, permissions: string[]): string[] {
  return permissions.filter((p) => {
    const m = RESOURCE_PERMISSION.exec(p);
    // view-git is a feature permission (git-status), whatever resources the site has; so are
    // view-.pages and manage-.pages (the route files, src/core/pages).
    return m !== null && !site.defs.has(m[2]) && m[2] !== ".files" && m[2] !== ".pages" && p !== "view-git";
  });
}

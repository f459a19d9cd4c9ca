/** Account administration shared by the CLI and library code (the HTTP API uses the record service). */
import type { Site } from "../site";
import { AppError, notFound } from "../errors";
import { SYSTEM, type Principal } from "./permissions";
import { createRecord, deleteRecord, updateRecord } from "../records/service";
import { publicRecord } from "../records/output";
import { findUserByEmail, ADMIN_ROLE } from "./users";
import { issueToken, type IssuedToken } from "./tokens";

/** Role `admin` always exists and always holds `(all)`. */
export async function ensureAdminRole(site: Site): Promise<void> {
  const existing = await site.store.findBy("roles", "name", ADMIN_ROLE);
  const want = JSON.stringify({ name: ADMIN_ROLE, permissions: ["(all)"] });
  if (existing && existing.data === want) return;
  const now = Math.floor(Date.now() / 1000);
  await site.store.transaction(async (tx) => {
    if (existing) await tx.update("roles", { ...existing, data: want, _modified: now });
    else await tx.insert("roles", { uuid: ADMIN_ROLE, data: want, _created: now, _modified: now, _created_by: null, _modified_by: null });
  });
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

export type UserSummary = { uuid: string; email: string; name: string | null; role: string | null; api: boolean };

export async function listUsers(site: Site): Promise<UserSummary[]> {
  const out: UserSummary[] = [];
  for await (const row of site.store.stream("users", { where: "", args: [], orderBy: "ORDER BY id", limit: null, offset: 0 })) {
    const d = JSON.parse(row.data) as { email?: string; name?: string; role?: string; api?: boolean };
    out.push({ uuid: row.uuid, email: d.email ?? "", name: d.name ?? null, role: d.role ?? null, api: d.api === true });
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

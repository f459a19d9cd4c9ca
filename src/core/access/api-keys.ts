/**
 * Personal API keys: long-lived, named, revocable credentials for scripts and CI, sent as
 * `Authorization: Bearer resd_<id>_<secret>`. Shown once; the rows of the internal resource
 * `.api_keys` (written by this module alone) keep only the SHA-256 of the secret.
 *
 * A key acts as its user with the user's role as it is at each request (a role change counts at
 * once), or — limited to a list — with the listed permissions the role holds (key-scope.ts). It
 * needs the user's API access: each key carries the user's `api_epoch`, which the account guard
 * renews whenever API access is switched, so a key dies with the access and stays dead when it is
 * switched on again. Keys do not ask for the second factor (that is their point), but making one
 * takes a signed-in caller and the password again, and a member who must enrol in two-factor
 * sign-in first is refused with their keys too.
 */
import { timingSafeEqual } from "node:crypto";
import type { Site } from "../site";
import { AppError, notFound, unauthorized, type FieldErrors } from "../errors";
import { queryList } from "../records/service";
import { newRecordId } from "../records/ids";
import type { StoredRecord } from "../store/types";
import type { Principal } from "./permissions";
import { anonymousPrincipal } from "./anonymous";
import { roleHolds, scopeToKey } from "./key-scope";
import { enrolFirst, findUser, mustEnrol2fa, rolePermissions, withAnonymousAllows, type UserRow } from "./users";

export const API_KEYS = ".api_keys";
export const MAX_KEYS_PER_USER = 50;
const MAX_DAYS = 3650;
const MAX_PERMISSIONS = 100;
/** `last_used` is written back at most this often per key (seconds). */
const TOUCH_EVERY = 60;

type KeyData = {
  owner: string;
  name: string;
  /** SHA-256 of the secret, hex. */
  hash: string;
  created: number;
  expires: number | null;
  last_used: number | null;
  permissions: string[] | null;
  /** The owner's `api_epoch` when the key was made (null: the owner had none yet). */
  api_epoch: string | null;
};

/** A key as its owner sees it (times in seconds since the epoch); `key` only in the answer that made it. */
export type ApiKeyInfo = { id: string; name: string; created: number; expires: number | null; last_used: number | null; permissions: string[] | null };

const KEY = /^resd_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})_([A-Za-z0-9_-]{43})$/;
/** Bearer values of this shape are API keys, not tokens (a JWT starts with `ey`). */
export const isApiKey = (bearer: string) => bearer.startsWith("resd_");

const sha256 = (s: string) => new Bun.CryptoHasher("sha256").update(s).digest("hex");
const nowSec = () => Math.floor(Date.now() / 1000);
const parse = (row: StoredRecord) => JSON.parse(row.data) as KeyData;
const info = (id: string, d: KeyData): ApiKeyInfo => ({ id, name: d.name, created: d.created, expires: d.expires, last_used: d.last_used, permissions: d.permissions });
const epochOf = (u: UserRow) => (typeof u.api_epoch === "string" ? u.api_epoch : null);
/** Still bound to its user's API access (else it died when the access was switched). */
const bound = (d: KeyData, u: UserRow) => u.api === true && (d.api_epoch ?? null) === epochOf(u);
const expired = (d: KeyData, now = nowSec()) => d.expires !== null && d.expires <= now;

export type NewKey = { name?: unknown; expires_in_days?: unknown; permissions?: unknown };

/** Checks a new key's name, lifetime and permissions (422 with `errors` per field). */
async function checkNewKey(site: Site, user: UserRow, o: NewKey): Promise<{ name: string; days: number | null; permissions: string[] | null }> {
  const errors: FieldErrors = {};
  const name = typeof o.name === "string" ? o.name.trim() : "";
  const length = [...name].length;
  if (length < 1 || length > 100 || /[\u0000-\u001f\u007f]/.test(name)) errors.name = "must be 1-100 characters, without control characters";
  let days: number | null = null;
  if (o.expires_in_days !== undefined && o.expires_in_days !== null) {
    // Fractions count (0.5: twelve hours); at least one second.
    if (typeof o.expires_in_days === "number" && Number.isFinite(o.expires_in_days) && o.expires_in_days > 0 && o.expires_in_days <= MAX_DAYS) days = o.expires_in_days;
    else errors.expires_in_days = `must be a number of days above 0, at most ${MAX_DAYS}`;
  }
  let permissions: string[] | null = null;
  if (o.permissions !== undefined && o.permissions !== null) {
    const list = o.permissions;
    if (!Array.isArray(list) || list.length === 0 || list.length > MAX_PERMISSIONS || !list.every((x) => typeof x === "string" && /^\S{1,200}$/.test(x))) {
      errors.permissions = `must be a list of 1-${MAX_PERMISSIONS} permissions (leave it out for all of your rights)`;
    } else {
      permissions = [...new Set(list as string[])];
      const own = await rolePermissions(site, user.role);
      const lacking = permissions.filter((perm) => !roleHolds(own, perm, site.defs));
      if (lacking.length) errors.permissions = `a key gets your rights or fewer: your role does not hold ${lacking.slice(0, 5).join(", ")}`;
    }
  }
  if (Object.keys(errors).length) throw new AppError(422, "INVALID_DATA", "one or more fields are invalid", { errors });
  return { name, days, permissions };
}

/** One key made at a time per user in this process, so two requests at once do not pass the bound of 50 together. */
const making = new Map<string, Promise<unknown>>();
function oneAtATime<T>(owner: string, fn: () => Promise<T>): Promise<T> {
  const run = (making.get(owner) ?? Promise.resolve()).catch(() => undefined).then(fn);
  const tail = run.catch(() => undefined);
  making.set(owner, tail);
  void tail.then(() => { if (making.get(owner) === tail) making.delete(owner); });
  return run;
}

/** Makes a key for `user` (who needs API access); the answer holds the key itself, never shown again. */
export async function createApiKey(site: Site, user: UserRow, o: NewKey): Promise<ApiKeyInfo & { key: string }> {
  if (user.api !== true) throw new AppError(403, "ACCESS_DENIED", "this user has no API access");
  if (await mustEnrol2fa(site, user)) throw enrolFirst();
  const v = await checkNewKey(site, user, o);
  return oneAtATime(user.uuid, async () => {
    if ((await apiKeysOf(site, user)).length >= MAX_KEYS_PER_USER) {
      throw new AppError(409, "CONFLICT", `at most ${MAX_KEYS_PER_USER} API keys per user: revoke one first`);
    }
    const id = newRecordId();
    const secret = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");
    const created = nowSec();
    const data: KeyData = {
      owner: user.uuid, name: v.name, hash: sha256(secret), created,
      expires: v.days === null ? null : created + Math.max(1, Math.round(v.days * 86400)), last_used: null, permissions: v.permissions, api_epoch: epochOf(user),
    };
    await site.store.transaction((tx) => tx.insert(API_KEYS, { uuid: id, data: JSON.stringify(data), _created: created, _modified: created, _created_by: user.uuid, _modified_by: user.uuid }));
    return { ...info(id, data), key: `resd_${id}_${secret}` };
  });
}

/** The user's keys, oldest first (expired ones included, until revoked); keys that died with API access are removed here. */
export async function apiKeysOf(site: Site, user: UserRow): Promise<ApiKeyInfo[]> {
  const def = site.defs.get(API_KEYS)!;
  const { rows } = await queryList(site, def, { filter: `owner:${user.uuid}`, sort: "_created|asc", limit: "1000" });
  const out: ApiKeyInfo[] = [];
  const dead: string[] = [];
  for await (const row of rows) {
    const d = parse(row);
    if (d.owner !== user.uuid) continue;
    if ((d.api_epoch ?? null) !== epochOf(user)) dead.push(row.uuid);
    else out.push(info(row.uuid, d));
  }
  if (dead.length) await site.store.transaction(async (tx) => { for (const id of dead) await tx.delete(API_KEYS, id); });
  return out;
}

/** Revokes a key; `owner`: only that user's (another's is as unknown as a missing one). 404 when there is none. */
export async function revokeApiKey(site: Site, id: string, owner: string | null): Promise<void> {
  const gone = await site.store.transaction(async (tx) => {
    const row = /^[0-9a-f-]{36}$/.test(id) ? await tx.get(API_KEYS, id) : null;
    if (!row || (owner !== null && parse(row).owner !== owner)) return false;
    return tx.delete(API_KEYS, id);
  });
  if (!gone) throw notFound(`API key ${id.slice(0, 64)} does not exist`);
}

type Cached = { keys: number; users: number; roles: number; anon: Principal; expires: number | null; lastUsed: number | null; principal: Principal };
const principals = new WeakMap<Site, Map<string, Cached>>();

/** A cached answer still holds: nothing it rests on changed (the change marks, the allow files) and the key has not expired. */
const fresh = (hit: Cached, keys: number | undefined, users: number | undefined, roles: number | undefined, anon: Principal, now: number) =>
  hit.keys === keys && hit.users === users && hit.roles === roles && hit.anon === anon && !(hit.expires !== null && hit.expires <= now);

/**
 * The caller behind an API key when that is known without waiting (the store reads its change
 * marks in place, and nothing the cached answer rests on changed): the hot read path's way, as for
 * tokens. Null otherwise: apiKeyPrincipal decides, with its errors.
 */
export function knownApiKeyPrincipal(site: Site, bearer: string): Principal | null {
  const now = site.store.now;
  const hit = principals.get(site)?.get(bearer);
  if (!now || !hit) return null;
  const t = nowSec();
  if (!fresh(hit, now.lastChange(API_KEYS), now.lastChange("users"), now.lastChange("roles"), anonymousPrincipal(site), t)) return null;
  const m = KEY.exec(bearer);
  if (m) touch(site, m[1], hit, t);
  return hit.principal;
}

/**
 * The caller behind an API key, or 401 for a key malformed, unknown, revoked, expired, or whose
 * user is gone or has no API access. Cached until the key, `users` or `roles` change, so a revoked
 * key, a role change or API access switched off counts at once.
 */
export async function apiKeyPrincipal(site: Site, bearer: string): Promise<Principal> {
  const m = KEY.exec(bearer);
  if (!m) throw unauthorized("the API key is malformed");
  let cache = principals.get(site);
  if (!cache) principals.set(site, (cache = new Map()));
  const [keys, users, roles] = await Promise.all([site.store.lastChange(API_KEYS), site.store.lastChange("users"), site.store.lastChange("roles")]);
  const anon = anonymousPrincipal(site);
  const now = nowSec();
  const hit = cache.get(bearer);
  if (hit && fresh(hit, keys, users, roles, anon, now)) {
    touch(site, m[1], hit, now);
    return hit.principal;
  }
  cache.delete(bearer);
  const row = await site.store.get(API_KEYS, m[1]);
  const d = row ? parse(row) : null;
  if (!d || !timingSafeEqual(Buffer.from(sha256(m[2]), "hex"), Buffer.from(d.hash, "hex"))) throw unauthorized("this API key was revoked or never existed");
  if (expired(d, now)) throw unauthorized("this API key has expired");
  const user = await findUser(site, d.owner);
  if (!user) throw unauthorized("the API key's user no longer exists");
  if (!bound(d, user)) throw unauthorized("the API key's user has no API access (switching it off ends every key)");
  const own = scopeToKey(await rolePermissions(site, user.role), d.permissions, site.defs);
  const principal: Principal = {
    kind: "user",
    uuid: user.uuid,
    email: user.email,
    // A limited key's rights are its list: nothing that reads the role itself (git) may widen them.
    role: d.permissions ? null : user.role ?? null,
    permissions: withAnonymousAllows(site, own),
    resources: site.defs,
    apiKey: { id: m[1], permissions: d.permissions },
  };
  if (await mustEnrol2fa(site, user)) principal.mustEnrol2fa = true;
  const entry: Cached = { keys, users, roles, anon, expires: d.expires, lastUsed: d.last_used, principal };
  if (cache.size > 50_000) cache.clear();
  cache.set(bearer, entry);
  touch(site, m[1], entry, now);
  return principal;
}

/** Notes the key's use, at most once a minute, after the answer and never in its way. */
function touch(site: Site, id: string, entry: Cached, now: number): void {
  if (entry.lastUsed !== null && now - entry.lastUsed < TOUCH_EVERY) return;
  entry.lastUsed = now;
  site.store.transaction(async (tx) => {
    const row = await tx.get(API_KEYS, id);
    if (!row) return;
    const d = parse(row);
    if (d.last_used !== null && now - d.last_used < TOUCH_EVERY) return;
    await tx.update(API_KEYS, { ...row, data: JSON.stringify({ ...d, last_used: now }) });
  }).catch((e) => console.error("API key last-use note failed:", e));
}

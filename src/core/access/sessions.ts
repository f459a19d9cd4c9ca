/**
 * Server-side sessions for the service's own pages. The cookie holds a random 256-bit id; the
 * database holds only its SHA-256, the user, and a fingerprint of the user's password hash and
 * session epoch (a password change ends every session; so does switching two-factor sign-in on or
 * off, see totp.ts). A session lives `sessionTtl` seconds after its last use.
 */
import type { Site } from "../site";
import type { SessionRow } from "../store/types";
import type { Principal } from "./permissions";
import { passwordFingerprint } from "./tokens";
import { findUser, principalForUser, type UserRow } from "./users";
import { anonymousPrincipal } from "./anonymous";

export const SESSION_COOKIE = "resd_session";
/** Sliding expiry is written back at most once a minute (or per quarter lifetime), not on every request. */
const touchEvery = (ttlSeconds: number) => Math.min(60_000, (ttlSeconds * 1000) / 4);

const hashId = (raw: string) => new Bun.CryptoHasher("sha256").update(raw).digest("hex");

/**
 * A session's: changes with the password hash and with the user's `session_epoch`, which totp.ts
 * renews when two-factor sign-in is switched on or off or reset. Users who never had an epoch keep
 * the plain password fingerprint their sessions were started with.
 */
export const sessionFingerprint = (u: UserRow) =>
  typeof u.session_epoch === "string"
    ? new Bun.CryptoHasher("sha256").update(String(u.password ?? "")).update(`\u0000${u.session_epoch}`).digest("hex").slice(0, 16)
    : passwordFingerprint(u);

export async function startSession(site: Site, user: UserRow): Promise<{ id: string; expires: number }> {
  const raw = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");
  const now = Date.now();
  const expires = now + site.config.sessionTtl * 1000;
  const a = site.store.access;
  await a.putSession({ id: hashId(raw), user: user.uuid, pfp: sessionFingerprint(user), created: now, seen: now, expires });
  // Expired rows are swept now and then, on sign-in, so the table never grows without bound.
  if (Math.random() < 0.05) await a.purgeSessions(now);
  return { id: raw, expires };
}

export async function endSession(site: Site, raw: string): Promise<void> {
  await site.store.access.deleteSession(hashId(raw));
}

/** `anon`: the anonymous allows the principal holds too (a new object whenever the allow files change). */
type Cached = { version: number; anon: Principal; row: SessionRow; principal: Principal };
const caches = new WeakMap<Site, Map<string, Cached>>();

/** The signed-in user's principal, or null for a missing, expired or revoked session. */
export async function sessionPrincipal(site: Site, raw: string): Promise<Principal | null> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(raw)) return null;
  const a = site.store.access;
  const id = hashId(raw);
  const now = Date.now();
  let cache = caches.get(site);
  if (!cache) caches.set(site, (cache = new Map()));
  const version = a.version();
  const anon = anonymousPrincipal(site);
  let hit = cache.get(id);
  if (!hit || hit.version !== version || hit.anon !== anon) {
    cache.delete(id);
    const row = await a.getSession(id);
    if (!row) return null;
    const user = await findUser(site, row.user);
    if (!user || sessionFingerprint(user) !== row.pfp) return null;
    hit = { version, anon, row, principal: await principalForUser(site, user, true) };
    if (cache.size > 10_000) cache.clear();
    cache.set(id, hit);
  }
  if (hit.row.expires <= now) return null;
  if (now - hit.row.seen > touchEvery(site.config.sessionTtl)) {
    hit.row = { ...hit.row, seen: now, expires: now + site.config.sessionTtl * 1000 };
    a.touchSession(id, now, hit.row.expires).catch((e) => console.error("session touch failed:", e));
  }
  return hit.principal;
}

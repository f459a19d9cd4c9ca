/**
 * Bearer tokens: HS256 JWTs signed with DIR/.env's RESD_TOKEN_SECRET (algorithm pinned on verify).
 * A token names its user and a fingerprint of the user's password hash and token epoch, and is
 * re-checked against the stored user on every use, so switching API access off, removing the user
 * or changing the password stops it at once, and switching API access on again does not revive it.
 */
import { SignJWT, jwtVerify } from "jose";
import type { Site } from "../site";
import { AppError, unauthorized } from "../errors";
import { enrolFirst, findUser, mustEnrol2fa, principalForUser, type UserRow } from "./users";
import type { Principal } from "./permissions";
import { anonymousPrincipal } from "./anonymous";

export type IssuedToken = { token: string; token_created: number; token_expires: number };

const keys = new WeakMap<Site, Uint8Array>();
const keyOf = (site: Site) => {
  let k = keys.get(site);
  if (!k) {
    if (!site.config.tokenSecret) throw new AppError(500, "INTERNAL_ERROR", "no token signing key (RESD_TOKEN_SECRET)");
    k = new TextEncoder().encode(site.config.tokenSecret);
    keys.set(site, k);
  }
  return k;
};

/** Changes whenever the password hash changes (sessions end with it, too). */
export const passwordFingerprint = (u: UserRow) => new Bun.CryptoHasher("sha256").update(String(u.password ?? "")).digest("hex").slice(0, 16);

/**
 * A token's: changes with the password hash and with the token epoch, which account-guard.ts renews
 * when API access is switched. Users written before epochs existed have none: their tokens keep the
 * fingerprint they were issued with.
 */
const tokenFingerprint = (u: UserRow) =>
  typeof u.token_epoch === "string"
    ? new Bun.CryptoHasher("sha256").update(String(u.password ?? "")).update(`\u0000${u.token_epoch}`).digest("hex").slice(0, 16)
    : passwordFingerprint(u);

export async function issueToken(site: Site, user: UserRow): Promise<IssuedToken> {
  if (user.api !== true) throw new AppError(403, "ACCESS_DENIED", "this user has no API access");
  // A member of a role that requires two-factor sign-in gets a token once enrolled (totp.ts).
  if (await mustEnrol2fa(site, user)) throw enrolFirst();
  const now = Math.floor(Date.now() / 1000);
  const exp = now + site.config.tokenTtl;
  const token = await new SignJWT({ pfp: tokenFingerprint(user) })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject(user.uuid)
    .setIssuedAt(now)
    .setExpirationTime(exp)
    .setJti(crypto.randomUUID())
    .sign(keyOf(site));
  return { token, token_created: now, token_expires: exp };
}

type Claims = { sub: string; exp: number; pfp: string };
/** Signature checks are the costly part; a token's claims are kept per site after the first check. */
const claimCaches = new WeakMap<Site, Map<string, Claims>>();

async function claimsOf(site: Site, token: string): Promise<Claims> {
  let cache = claimCaches.get(site);
  if (!cache) claimCaches.set(site, (cache = new Map()));
  let claims = cache.get(token);
  if (!claims) {
    try {
      const { payload } = await jwtVerify(token, keyOf(site), { algorithms: ["HS256"] });
      claims = payload as unknown as Claims;
    } catch {
      throw unauthorized("the bearer token is invalid or expired");
    }
    if (typeof claims.sub !== "string" || typeof claims.exp !== "number" || typeof claims.pfp !== "string") {
      throw unauthorized("the bearer token is not a resd token");
    }
    if (cache.size > 50_000) cache.clear();
    cache.set(token, claims);
  }
  if (claims.exp * 1000 <= Date.now()) {
    cache.delete(token);
    throw unauthorized("the bearer token has expired");
  }
  return claims;
}

/** Returns the token's user, or throws 401 UNAUTHORIZED. */
export async function verifyToken(site: Site, token: string): Promise<UserRow> {
  const claims = await claimsOf(site, token);
  const user = await findUser(site, claims.sub);
  if (!user || user.api !== true || tokenFingerprint(user) !== claims.pfp) throw unauthorized("the bearer token is no longer valid for this user");
  return user;
}

/** `anon`: the anonymous allows the principal holds too (a new object whenever the allow files change). */
type CachedPrincipal = { users: number; roles: number; anon: Principal; exp: number; principal: Principal };
const principals = new WeakMap<Site, Map<string, CachedPrincipal>>();
const fresh = (site: Site, hit: CachedPrincipal | undefined, users: number, roles: number) =>
  hit !== undefined && hit.users === users && hit.roles === roles && hit.exp * 1000 > Date.now() && hit.anon === anonymousPrincipal(site);

/**
 * The caller behind a token that `tokenPrincipal` checked before, while nothing it depends on
 * changed, answered without waiting; null when that is not known at once (ask tokenPrincipal).
 */
export function knownTokenPrincipal(site: Site, token: string): Principal | null {
  const users = site.store.now?.lastChange("users");
  const roles = site.store.now?.lastChange("roles");
  if (users === undefined || roles === undefined) return null;
  const hit = principals.get(site)?.get(token);
  return fresh(site, hit, users, roles) ? hit!.principal : null;
}

/**
 * The caller behind a bearer token. Authentication runs on every request, so the principal is
 * cached until the token expires or anything in `users` or `roles` changes. The change marks live
 * in SQLite, so a change by another process (`resd user api X --off`) counts at once.
 */
export async function tokenPrincipal(site: Site, token: string): Promise<Principal> {
  let cache = principals.get(site);
  if (!cache) principals.set(site, (cache = new Map()));
  const users = await site.store.lastChange("users");
  const roles = await site.store.lastChange("roles");
  const hit = cache.get(token);
  if (fresh(site, hit, users, roles)) return hit!.principal;
  cache.delete(token);
  const anon = anonymousPrincipal(site);
  const claims = await claimsOf(site, token);
  const principal = await principalForUser(site, await verifyToken(site, token));
  if (cache.size > 50_000) cache.clear();
  cache.set(token, { users, roles, anon, exp: claims.exp, principal });
  return principal;
}

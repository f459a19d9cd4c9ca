/**
 * Bearer tokens: HS256 JWTs signed with DIR/.env's RESD_TOKEN_SECRET (algorithm pinned on verify).
 * A token names its user and a fingerprint of the user's password hash, and is re-checked against
 * the stored user on every use, so switching API access off, removing the user or changing the
 * password stops it at once.
 */
import { SignJWT, jwtVerify } from "jose";
import type { Site } from "../site";
import { AppError, unauthorized } from "../errors";
import { findUser, type UserRow } from "./users";

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

/** Changes whenever the password hash changes. */
export const passwordFingerprint = (u: UserRow) => new Bun.CryptoHasher("sha256").update(String(u.password ?? "")).digest("hex").slice(0, 16);

export async function issueToken(site: Site, user: UserRow): Promise<IssuedToken> {
  if (user.api !== true) throw new AppError(403, "ACCESS_DENIED", "this user has no API access");
  const now = Math.floor(Date.now() / 1000);
  const exp = now + site.config.tokenTtl;
  const token = await new SignJWT({ pfp: passwordFingerprint(user) })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject(user.uuid)
    .setIssuedAt(now)
    .setExpirationTime(exp)
    .setJti(crypto.randomUUID())
    .sign(keyOf(site));
  return { token, token_created: now, token_expires: exp };
}

type Claims = { sub: string; exp: number; pfp: string };
const verified = new Map<string, Claims>();

/** Returns the token's user, or throws 401 UNAUTHORIZED. */
export async function verifyToken(site: Site, token: string): Promise<UserRow> {
  let claims = verified.get(token);
  if (!claims) {
    try {
      const { payload } = await jwtVerify(token, keyOf(site), { algorithms: ["HS256"] });
      claims = payload as unknown as Claims;
    } catch {
      throw unauthorized("the bearer token is invalid or expired");
    }
    if (verified.size > 50_000) verified.clear();
    verified.set(token, claims);
  }
  if (claims.exp * 1000 <= Date.now()) {
    verified.delete(token);
    throw unauthorized("the bearer token has expired");
  }
  const user = await findUser(site, claims.sub);
  if (!user || user.api !== true || passwordFingerprint(user) !== claims.pfp) throw unauthorized("the bearer token is no longer valid for this user");
  return user;
}

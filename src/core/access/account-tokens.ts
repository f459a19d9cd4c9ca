/**
 * One-time tokens of the account flows (password reset, invitation, e-mail change). The token is
 * `<user uuid>.<secret>` (so the user is found without a scan); the user's record keeps only the
 * secret's SHA-256, its expiry and what it is for, in a field the API never shows
 * (`password_reset_token`, `change_email_token`). A token is used up by the write that uses it.
 */
import { timingSafeEqual } from "node:crypto";
import { AppError } from "../errors";
import type { UserRow } from "./users";

export type TokenKind = "reset" | "invite" | "email";

/** What the user's record keeps of a token. `pfp`: the password it was issued against (a reset dies with a password change). */
export type StoredToken = { h: string; exp: number; kind: TokenKind; pfp?: string; email?: string };

const sha = (s: string) => new Bun.CryptoHasher("sha256").update(s).digest("hex");

export function issueToken(user: string, kind: TokenKind, ttlSeconds: number, extra: Pick<StoredToken, "pfp" | "email"> = {}): { token: string; stored: StoredToken } {
  const secret = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");
  return { token: `${user}.${secret}`, stored: { h: sha(secret), exp: Date.now() + ttlSeconds * 1000, kind, ...extra } };
}

/** The user a token names, or null when it is no token of ours. */
export function tokenUser(token: unknown): { user: string; secret: string } | null {
  if (typeof token !== "string" || token.length > 200) return null;
  const m = /^([0-9a-zA-Z-]{1,64})\.([A-Za-z0-9_-]{43})$/.exec(token.trim());
  return m ? { user: m[1], secret: m[2] } : null;
}

/** Whether `secret` is the stored token's, of the right kind and not expired (compared in constant time). */
export function tokenHolds(stored: unknown, secret: string, kinds: readonly TokenKind[], now = Date.now()): stored is StoredToken {
  if (!stored || typeof stored !== "object") return false;
  const s = stored as Partial<StoredToken>;
  if (typeof s.h !== "string" || typeof s.exp !== "number" || !kinds.includes(s.kind as TokenKind) || s.exp < now) return false;
  const a = Buffer.from(sha(secret), "hex");
  const b = Buffer.from(s.h, "hex");
  return a.length === b.length && timingSafeEqual(a, b);
}

export const storedToken = (user: UserRow, field: "password_reset_token" | "change_email_token"): unknown => user[field];

/** 400 for a link that is malformed, expired, used, another user's or outlived by a password change. */
export const invalidLink = (then: string) => new AppError(400, "INVALID_DATA", `this link is invalid, expired or used already; ${then}`, { errors: { token: "invalid, expired or used" } });

/**
 * Checks an e-mail and password for a token or session login, with the spec's statuses:
 * 400 missing credentials, 429 account locked, 403 unknown account, 401 wrong password,
 * 403 no API access (token logins only).
 */
import type { Site } from "../site";
import { AppError, badRequest } from "../errors";
import { findUserByEmail, type UserRow } from "./users";
import { clearFailures, reserveAttempt } from "./rate-limit";

/** `code`: the second factor (totp.ts), when the caller sends one with the password. */
export type Credentials = { email: string; password: string; code?: string };

/** Reads `email` and `password` (and an optional `code`) from a parsed body; both must be non-empty strings. */
export function credentialsFrom(body: unknown): Credentials {
  const o = body && typeof body === "object" && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
  const email = typeof o.email === "string" ? o.email.trim() : "";
  const password = typeof o.password === "string" ? o.password : "";
  if (!email || !password) throw badRequest("email and password are required");
  const code = codeFrom(o.code, false);
  return code === undefined ? { email, password } : { email, password, code };
}

/** A second-factor code from a body: a string of 1–64 characters (400 otherwise; absent only when not `required`). */
export function codeFrom(v: unknown, required: boolean): string | undefined {
  if (v === undefined || v === null || v === "") {
    if (required) throw badRequest("code is required");
    return undefined;
  }
  if (typeof v !== "string" || v.length > 64) throw badRequest("code must be a string of at most 64 characters");
  return v;
}

/**
 * The password again, for what a stolen session alone must not do (two-factor settings, API
 * keys): counted against the account like a login, so it cannot be guessed through a session.
 */
export async function checkPassword(site: Site, user: UserRow, password: unknown): Promise<void> {
  if (typeof password !== "string" || password === "") throw badRequest("password is required");
  await reserveAttempt(site, user.email);
  const ok = typeof user.password === "string" && user.password !== "" && (await Bun.password.verify(password, user.password));
  if (!ok) throw new AppError(401, "INVALID_CREDENTIALS", "wrong password");
  await clearFailures(site, user.email);
}

export async function login(site: Site, c: Credentials, opts: { needApi: boolean }): Promise<UserRow> {
  // The guess is counted before it is checked; only a right password gives it back.
  await reserveAttempt(site, c.email);
  const user = await findUserByEmail(site, c.email);
  if (!user) throw new AppError(403, "ACCESS_DENIED", "no such account");
  const ok = typeof user.password === "string" && user.password !== "" && (await Bun.password.verify(c.password, user.password));
  if (!ok) throw new AppError(401, "INVALID_CREDENTIALS", "wrong e-mail or password");
  await clearFailures(site, c.email);
  if (opts.needApi && user.api !== true) throw new AppError(403, "ACCESS_DENIED", "this user has no API access");
  return user;
}

/**
 * Checks an e-mail and password for a token or session login, with the spec's statuses:
 * 400 missing credentials, 429 account locked, 403 unknown account, 401 wrong password,
 * 403 no API access (token logins only).
 */
import type { Site } from "../site";
import { AppError, badRequest } from "../errors";
import { findUserByEmail, type UserRow } from "./users";
import { clearFailures, reserveAttempt } from "./rate-limit";

export type Credentials = { email: string; password: string };

/** Reads `email` and `password` from a parsed body; both must be non-empty strings. */
export function credentialsFrom(body: unknown): Credentials {
  const o = body && typeof body === "object" && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
  const email = typeof o.email === "string" ? o.email.trim() : "";
  const password = typeof o.password === "string" ? o.password : "";
  if (!email || !password) throw badRequest("email and password are required");
  return { email, password };
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

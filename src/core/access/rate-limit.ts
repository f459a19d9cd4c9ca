/**
 * Brute-force protection per account (the e-mail address as typed, lower-cased). State lives in
 * SQLite, so it survives restarts and is shared by every server process and the CLI.
 *
 * Policy: after `loginMaxFailures` failed logins (default 5) the account is locked for `loginLock`
 * seconds (default 60); every further failure after a lock doubles the lock, at most one hour.
 * While locked every attempt, even with the right password, gets 429 with Retry-After and is not
 * counted. A successful login clears the counter; a counter with no failure for 24 hours is forgotten.
 */
import type { Site } from "../site";
import { AppError } from "../errors";
import { accessStore, type LoginState } from "../store/access-sqlite";

export const FORGET_AFTER_MS = 24 * 3600 * 1000;
export const MAX_LOCK_MS = 3600 * 1000;

/** Lock length after `failures` failures, or 0 while under the limit. Pure, for tests. */
export function lockFor(failures: number, max: number, lockSeconds: number): number {
  if (failures < max) return 0;
  return Math.min(lockSeconds * 1000 * 2 ** (failures - max), MAX_LOCK_MS);
}

const accountKey = (email: string) => email.trim().toLowerCase();

/** Throws 429 TOO_MANY_REQUESTS while the account is locked. */
export async function checkNotLocked(site: Site, email: string, now = Date.now()): Promise<void> {
  const s = await accessStore(site.store).loginState(accountKey(email));
  if (s && s.locked_until > now) {
    const retryAfter = Math.max(1, Math.ceil((s.locked_until - now) / 1000));
    throw new AppError(429, "TOO_MANY_REQUESTS", `too many failed logins for this account; try again in ${retryAfter} s`, { retryAfter });
  }
}

export async function recordFailure(site: Site, email: string, now = Date.now()): Promise<LoginState | null> {
  const { loginMaxFailures: max, loginLock } = site.config;
  // Stale counters are swept now and then, here, so the table never grows without bound.
  if (Math.random() < 0.01) await purgeLoginStates(site, now);
  return accessStore(site.store).updateLoginState(accountKey(email), (cur) => {
    const failures = (cur && now - cur.last_ms < FORGET_AFTER_MS ? cur.failures : 0) + 1;
    const lock = lockFor(failures, max, loginLock);
    return { account: accountKey(email), failures, last_ms: now, locked_until: lock ? now + lock : 0 };
  });
}

export async function clearFailures(site: Site, email: string): Promise<void> {
  const a = accessStore(site.store);
  if (await a.loginState(accountKey(email))) await a.updateLoginState(accountKey(email), () => null);
}

/** Drops counters that can no longer matter (called from the server's upkeep). */
export const purgeLoginStates = (site: Site, now = Date.now()) => accessStore(site.store).purgeLoginStates(now - FORGET_AFTER_MS);

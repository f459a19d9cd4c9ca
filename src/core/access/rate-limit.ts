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
import type { LoginState } from "../store/types";
import type { Principal } from "./permissions";

export const FORGET_AFTER_MS = 24 * 3600 * 1000;
export const MAX_LOCK_MS = 3600 * 1000;

/** Lock length after `failures` failures, or 0 while under the limit. Pure, for tests. */
export function lockFor(failures: number, max: number, lockSeconds: number): number {
  if (failures < max) return 0;
  return Math.min(lockSeconds * 1000 * 2 ** (failures - max), MAX_LOCK_MS);
}

const accountKey = (email: string) => email.trim().toLowerCase();

const locked = (lockedUntil: number, now: number) => {
  const retryAfter = Math.max(1, Math.ceil((lockedUntil - now) / 1000));
  return new AppError(429, "TOO_MANY_REQUESTS", `too many failed logins for this account; try again in ${retryAfter} s`, { retryAfter });
};

/**
 * Takes one guess at an account before the (slow) password check: counts it as a failure at once,
 * or throws 429 when the account is locked. Guesses sent in parallel therefore see each other's
 * counts, and at most `loginMaxFailures` of them are ever checked; a successful check gives the
 * reservation back with `clearFailures`.
 */
export async function reserveAttempt(site: Site, email: string, now = Date.now()): Promise<void> {
  const { loginMaxFailures: max, loginLock } = site.config;
  // Stale counters are swept now and then, here, so the table never grows without bound.
  if (Math.random() < 0.01) await purgeLoginStates(site, now);
  let refused: AppError | null = null;
  await site.store.access.updateLoginState(accountKey(email), (cur) => {
    if (cur && cur.locked_until > now) {
      refused = locked(cur.locked_until, now);
      return cur;
    }
    const failures = (cur && now - cur.last_ms < FORGET_AFTER_MS ? cur.failures : 0) + 1;
    const lock = lockFor(failures, max, loginLock);
    return { account: accountKey(email), failures, last_ms: now, locked_until: lock ? now + lock : 0 };
  });
  if (refused) throw refused;
}

export async function clearFailures(site: Site, email: string): Promise<void> {
  const a = site.store.access;
  if (await a.loginState(accountKey(email))) await a.updateLoginState(accountKey(email), () => null);
}

/** Drops counters that can no longer matter (called from the server's upkeep). */
export const purgeLoginStates = (site: Site, now = Date.now()) => site.store.access.purgeLoginStates(now - FORGET_AFTER_MS);

const HOUR_MS = 3600 * 1000;

/**
 * Counts one use of `key` against `max` per hour, or throws 429 with Retry-After (`what` names the
 * bound). Counted in the same table as logins, so the limit holds across restarts and processes.
 * Keys hold a space, which no e-mail holds: they never meet an account's counter.
 */
export async function takeHourly(site: Site, key: string, max: number, what: string, now = Date.now()): Promise<void> {
  let refused: AppError | null = null;
  await site.store.access.updateLoginState(key, (cur) => {
    const fresh = !cur || now - cur.last_ms >= HOUR_MS;
    const calls = fresh ? 1 : cur.failures + 1;
    if (calls > max) {
      const retryAfter = Math.max(1, Math.ceil((cur!.last_ms + HOUR_MS - now) / 1000));
      refused = new AppError(429, "TOO_MANY_REQUESTS", `${what}; try again in ${retryAfter} s`, { retryAfter });
      return cur;
    }
    // `last_ms` is the start of the window; `locked_until` keeps the row from being purged early.
    return { account: key, failures: calls, last_ms: fresh ? now : cur.last_ms, locked_until: (fresh ? now : cur.last_ms) + HOUR_MS };
  });
  if (refused) throw refused;
}

/** Counts one AI provider call of a user (import-document, translation, completion, an agent's run) against `aiRate` per hour. */
export const takeAiCall = (site: Site, p: Principal, now = Date.now()): Promise<void> =>
  takeHourly(site, `ai ${p.uuid ?? p.kind}`, site.config.aiRate, `at most ${site.config.aiRate} AI calls per hour per user (RESD_AI_RATE)`, now);

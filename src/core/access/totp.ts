/**
 * Two-factor sign-in with time-based one-time codes as authenticator apps make them (RFC 6238:
 * SHA-1, 6 digits, 30-second steps, one step of drift either way), and recovery codes.
 *
 * The state lives in the user's record under the hidden key `totp`, written here alone
 * (account-guard.ts keeps every other writer off it, and derives the visible `two_factor`): the
 * secret, whether it is on, the last time step a code was taken at (a code is usable once, and no
 * older code after it), the SHA-256 of each unused recovery code, and an enrolment waiting for its
 * first code. Every code is checked in one transaction that reads and writes that state and keeps
 * other writers of `users` out, so a code sent twice at once signs in once. Wrong codes are counted
 * and locked per user like wrong passwords (rate-limit.ts, under the key `2fa <uuid>`).
 *
 * Switching it on or off, and an administrator's reset, renew the user's session and token epochs:
 * every session and bearer token of the user ends (the HTTP layer signs the caller in anew).
 */
import * as OTPAuth from "otpauth";
import type { Site } from "../site";
import type { StoreTx } from "../store/types";
import { AppError, badRequest, denied, notFound, unauthorized } from "../errors";
import { hasPermission, type Principal } from "./permissions";
import { checkPassword, codeFrom } from "./login";
import { clearFailures, reserveAttempt } from "./rate-limit";
import { findUser, hasTwoFactor, type UserRow } from "./users";
import { guardUserChange } from "./account-guard";

const PERIOD = 30;
const DIGITS = 6;
const WINDOW = 1;
const RECOVERY_CODES = 10;
/** A sign-in ticket (password right, code still to come) lives this long and signs in once. */
export const TICKET_MS = 5 * 60_000;

/** What `totp` in a user's record holds. */
export type TotpState = {
  /** The secret in force (base32), while `enabled`. */
  secret?: string;
  enabled?: boolean;
  /** The time step of the last code taken. */
  step?: number;
  /** SHA-256 of each unused recovery code (salted with the user's uuid). */
  recovery?: string[];
  /** An enrolment waiting for its first code (`created`: milliseconds). */
  pending?: { secret: string; created: number };
};

type Values = Record<string, unknown>;

const sha256 = (s: string) => new Bun.CryptoHasher("sha256").update(s).digest("hex");
const random = (bytes: number) => Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("base64url");
const stateOf = (data: Values): TotpState => (data.totp && typeof data.totp === "object" ? { ...(data.totp as TotpState) } : {});
const totpOf = (secret: string, label = "", issuer = "") =>
  new OTPAuth.TOTP({ issuer, label, algorithm: "SHA1", digits: DIGITS, period: PERIOD, secret: OTPAuth.Secret.fromBase32(secret) });

/** The name authenticator apps show for the site: RESD_SITE_NAME, else the public URL's host, else "resd". */
function issuerOf(site: Site): string {
  if (site.config.siteName) return site.config.siteName;
  try {
    return new URL(site.config.publicUrl).host || "resd";
  } catch {
    return "resd";
  }
}

/** A recovery code as typed (any case, spaces and dashes) → the form it was hashed in. */
const normal = (code: string) => code.replace(/[\s-]/g, "").toLowerCase();
const recoveryHash = (uuid: string, code: string) => sha256(`${uuid}\u0000${normal(code)}`);

/** Ten new recovery codes of 80 random bits each, `abcd-efgh-ijkl-mnop`. */
function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODES }, () => new OTPAuth.Secret({ size: 10 }).base32.toLowerCase().replace(/(.{4})(?=.)/g, "$1-"));
}

/** Every session and bearer token of the user ends (sessions.ts, tokens.ts). */
function renewEpochs(data: Values): void {
  data.session_epoch = crypto.randomUUID();
  data.token_epoch = crypto.randomUUID();
}

const wrongCode = () => new AppError(401, "INVALID_CREDENTIALS", "wrong or already used two-factor code", { two_factor: true });
const notOn = () => new AppError(409, "CONFLICT", "two-factor sign-in is not on for this account");

/**
 * Takes one code if it is right: a TOTP code of the current step (±1) newer than the last one
 * taken, or (with `recovery`) an unused recovery code, which is used up. Changes `state`.
 */
function take(uuid: string, state: TotpState, secret: string, raw: string, recovery: boolean, now: number): boolean {
  const code = normal(raw);
  if (/^\d{6}$/.test(code)) {
    const delta = totpOf(secret).validate({ token: code, timestamp: now, window: WINDOW });
    if (delta === null) return false;
    const step = OTPAuth.TOTP.counter({ period: PERIOD, timestamp: now }) + delta;
    // Usable once, and nothing older than the last code taken (RFC 6238, 5.2).
    if (typeof state.step === "number" && step <= state.step) return false;
    state.step = step;
    return true;
  }
  if (!recovery || !/^[a-z2-7]{16}$/.test(code)) return false;
  const hash = recoveryHash(uuid, code);
  const left = (state.recovery ?? []).filter((h) => h !== hash);
  if (left.length === (state.recovery ?? []).length) return false;
  state.recovery = left;
  return true;
}

/**
 * Changes one user's record in a transaction that keeps other writers of `users` out; `fn` changes
 * `data` in place. `by`: who made a change the record's `_modified` should tell (null: a sign-in).
 */
async function changeUser<T>(site: Site, uuid: string, by: string | null, fn: (data: Values, tx: StoreTx) => T | Promise<T>): Promise<T> {
  return site.store.transaction(async (tx) => {
    const row = await tx.get("users", uuid);
    if (!row) throw unauthorized("the user no longer exists");
    const data = JSON.parse(row.data) as Values;
    const result = await fn(data, tx);
    data.two_factor = hasTwoFactor(data);
    const stamp = by === null ? {} : { _modified: Math.floor(Date.now() / 1000), _modified_by: by };
    await tx.update("users", { ...row, data: JSON.stringify(data), ...stamp });
    return result;
  }, { exclusive: "users" });
}

/**
 * Checks `raw` against the secret in force (or, with `pending`, the enrolment's) and runs `fn` in
 * the same transaction. The guess is counted before it is checked; only a right code gives it back.
 */
async function withCode<T>(site: Site, user: UserRow, raw: string, opts: { recovery: boolean; pending?: boolean; by: string | null }, fn: (data: Values, state: TotpState) => T): Promise<T> {
  const key = `2fa ${user.uuid}`;
  await reserveAttempt(site, key);
  const result = await changeUser(site, user.uuid, opts.by, (data) => {
    const state = stateOf(data);
    const secret = opts.pending ? state.pending?.secret : state.enabled ? state.secret : undefined;
    if (!secret) throw opts.pending ? noEnrolment() : notOn();
    if (!take(user.uuid, state, secret, raw, opts.recovery, Date.now())) throw wrongCode();
    data.totp = state;
    return fn(data, state);
  });
  await clearFailures(site, key);
  return result;
}

const noEnrolment = () => new AppError(409, "CONFLICT", "no enrolment is waiting for its code: POST /api/v1/session/2fa/enrol first");

/** The caller's own record; API keys manage neither two-factor sign-in nor keys. */
export async function callerUser(site: Site, p: Principal): Promise<UserRow> {
  if (p.kind !== "user" || !p.uuid) throw unauthorized("sign in first");
  if (p.apiKey) throw new AppError(403, "ACCESS_DENIED", "an API key cannot do this: sign in, or use a bearer token from /api/v1/auth/token");
  const user = await findUser(site, p.uuid);
  if (!user) throw unauthorized("the signed-in user no longer exists");
  return user;
}

/** Starts (or restarts) an enrolment: a new secret, pending until a code confirms it. */
export async function enrol(site: Site, p: Principal, password: unknown): Promise<{ secret: string; otpauth_url: string }> {
  const user = await callerUser(site, p);
  await checkPassword(site, user, password);
  const on = () => new AppError(409, "CONFLICT", "two-factor sign-in is on already; disable it first to enrol again");
  if (hasTwoFactor(user)) throw on();
  const secret = new OTPAuth.Secret({ size: 20 }).base32;
  await changeUser(site, user.uuid, null, (data) => {
    if (hasTwoFactor(data)) throw on();
    data.totp = { pending: { secret, created: Date.now() } } satisfies TotpState;
  });
  return { secret, otpauth_url: totpOf(secret, user.email, issuerOf(site)).toString() };
}

/** Confirms the enrolment with a code from the app: on, with ten recovery codes (shown this once). */
export async function confirm(site: Site, p: Principal, code: unknown): Promise<{ enabled: true; recovery_codes: string[] }> {
  const user = await callerUser(site, p);
  const raw = codeFrom(code, true)!;
  const state = stateOf(user);
  if (state.enabled) throw new AppError(409, "CONFLICT", "two-factor sign-in is on already");
  if (!state.pending) throw noEnrolment();
  const codes = newRecoveryCodes();
  await withCode(site, user, raw, { recovery: false, pending: true, by: user.uuid }, (data, s) => {
    data.totp = { secret: s.pending!.secret, enabled: true, step: s.step, recovery: codes.map((c) => recoveryHash(user.uuid, c)) } satisfies TotpState;
    renewEpochs(data);
  });
  return { enabled: true, recovery_codes: codes };
}

/** Switches it off, with the password and a code (a recovery code too). */
export async function disable(site: Site, p: Principal, password: unknown, code: unknown): Promise<{ enabled: false }> {
  const user = await callerUser(site, p);
  await checkPassword(site, user, password);
  const raw = codeFrom(code, true)!;
  if (!hasTwoFactor(user)) throw notOn();
  await withCode(site, user, raw, { recovery: true, by: user.uuid }, (data) => {
    delete data.totp;
    renewEpochs(data);
  });
  return { enabled: false };
}

/** A new set of recovery codes (the old ones stop working), with the password and a code. */
export async function replaceRecoveryCodes(site: Site, p: Principal, password: unknown, code: unknown): Promise<{ recovery_codes: string[] }> {
  const user = await callerUser(site, p);
  await checkPassword(site, user, password);
  const raw = codeFrom(code, true)!;
  if (!hasTwoFactor(user)) throw notOn();
  const codes = newRecoveryCodes();
  await withCode(site, user, raw, { recovery: true, by: user.uuid }, (_data, s) => {
    s.recovery = codes.map((c) => recoveryHash(user.uuid, c));
  });
  return { recovery_codes: codes };
}

/**
 * An administrator switches someone's two-factor sign-in off (a lost phone): manage-users, and the
 * account guard's rule for changing that user (SYSTEM: `resd user 2fa-reset`, the way out for a
 * sole admin who lost their phone). Their sessions and tokens end when it was on.
 */
export async function resetTwoFactor(site: Site, p: Principal, uuid: string): Promise<{ enabled: false }> {
  if (p.kind === "anonymous") throw unauthorized("sign in first");
  if (!hasPermission(p, "manage-users")) throw denied(["manage-users"], "resetting someone's two-factor sign-in needs manage-users");
  await site.store.transaction(async (tx) => {
    const row = await tx.get("users", uuid);
    if (!row) throw notFound(`users/${uuid} does not exist`);
    const data = JSON.parse(row.data) as Values;
    await guardUserChange(site, tx, p, uuid, data);
    if (data.totp === undefined && data.two_factor === false) return;
    const had = data.totp !== undefined;
    delete data.totp;
    if (had) renewEpochs(data);
    data.two_factor = false;
    await tx.update("users", { ...row, data: JSON.stringify(data), _modified: Math.floor(Date.now() / 1000), _modified_by: p.uuid });
  }, { exclusive: "users" });
  await clearFailures(site, `2fa ${uuid}`);
  return { enabled: false };
}

/** The second step of a sign-in: a code (or recovery code) of a user who has two-factor sign-in on. */
export async function secondFactor(site: Site, user: UserRow, code: string): Promise<void> {
  await withCode(site, user, code, { recovery: true, by: null }, () => undefined);
}

const ticketKey = (ticket: string) => `2fa-ticket ${sha256(ticket)}`;

/**
 * A ticket for the code step of a sign-in whose password was right: it names its user, lives
 * TICKET_MS and signs in once. Only its hash is stored (with the failed-login counters).
 */
export async function issueTicket(site: Site, user: UserRow): Promise<string> {
  const ticket = `${user.uuid}.${random(32)}`;
  const now = Date.now();
  const key = ticketKey(ticket);
  await site.store.access.updateLoginState(key, () => ({ account: key, failures: 0, last_ms: now, locked_until: now + TICKET_MS }));
  return ticket;
}

/** The user a ticket and a right code sign in; 401 for a ticket unknown, used or expired. */
export async function redeemTicket(site: Site, ticket: unknown, code: unknown): Promise<UserRow> {
  if (typeof ticket !== "string" || ticket === "" || ticket.length > 200) throw badRequest("ticket is required");
  const raw = codeFrom(code, true)!;
  const gone = () => unauthorized("the sign-in ticket is unknown, used or expired: sign in with e-mail and password again");
  const dot = ticket.lastIndexOf(".");
  const key = ticketKey(ticket);
  const held = dot > 0 ? await site.store.access.loginState(key) : null;
  if (!held || held.locked_until <= Date.now()) throw gone();
  const user = await findUser(site, ticket.slice(0, dot));
  if (!user || !hasTwoFactor(user)) throw gone();
  await secondFactor(site, user, raw);
  let live = false;
  await site.store.access.updateLoginState(key, (cur) => {
    live = cur !== null && cur.locked_until > Date.now();
    return null;
  });
  if (!live) throw gone();
  return (await findUser(site, user.uuid)) ?? Promise.reject(gone());
}

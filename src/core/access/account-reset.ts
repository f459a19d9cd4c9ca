/**
 * Setting a password with a one-time link: a reset asked for by e-mail address, or an invitation
 * (a new user without a password, made by someone who may create users). One confirm serves both.
 *
 * A reset request answers the same, in the same time, whether the address has an account or not,
 * and is bounded per address and per client. Confirming sets the password (the password rules that
 * exist), which ends every session and token of the user, uses the token up and clears the lockout.
 */
import { AppError, notFound } from "../errors";
import { inviteLink, inviteMail, passwordChangedNotice, resetLink, resetMail } from "../mail/messages";
import { mailConfigured, publicBase, queueMail, requireMail } from "../mail/send";
import { prepareValues } from "../records/prepare";
import { actor, createRecord, writers } from "../records/service";
import type { Site } from "../site";
import type { StoreTx, StoredRecord } from "../store/types";
import { invalidLink, issueToken, tokenHolds, tokenUser, type StoredToken, type TokenKind } from "./account-tokens";
import { authorize, SYSTEM, type Principal } from "./permissions";
import { clearFailures, takeHourly } from "./rate-limit";
import { passwordFingerprint } from "./tokens";
import { findUserByEmail, parseUser } from "./users";

/** Resets asked per address and per client each hour (documented in docs/limits.md). */
export const RESET_PER_ADDRESS = 3;
export const RESET_PER_CLIENT = 20;
/** Every reset request takes at least this long, whatever it found: its time tells nothing. */
const RESET_FLOOR_MS = 400;

const INVALID_LINK = () => invalidLink("ask for a new one");

type TokenField = "password_reset_token" | "change_email_token";

/** The user's row with a hidden token field set, or without it (`null`: the token is used up). */
export function withToken(row: StoredRecord, field: TokenField, stored: StoredToken | null): StoredRecord {
  const data = JSON.parse(row.data) as Record<string, unknown>;
  if (stored) data[field] = stored;
  else delete data[field];
  return { ...row, data: JSON.stringify(data) };
}

/** Writes a hidden token field of a user inside `tx` (no history: users keep none; never shown). */
export const putUserToken = (tx: StoreTx, row: StoredRecord, field: TokenField, stored: StoredToken): Promise<void> =>
  tx.update("users", withToken(row, field, stored));

export function checkEmail(raw: unknown): string {
  if (typeof raw !== "string" || !raw.trim() || raw.length > 254) throw new AppError(422, "INVALID_DATA", "`email` must be an e-mail address", { errors: { email: "must be an e-mail address" } });
  return raw.trim().toLowerCase();
}

/**
 * `POST /api/v1/session/password-reset`: queues a reset mail when the address has an account. The
 * answer and its time are the same either way; `client` is the asking client's key (its address).
 */
export async function requestReset(site: Site, rawEmail: unknown, client: string): Promise<void> {
  const started = Date.now();
  const email = checkEmail(rawEmail);
  requireMail(site, "a password reset");
  publicBase(site);
  await takeHourly(site, `reset-client ${client}`, RESET_PER_CLIENT, `at most ${RESET_PER_CLIENT} password resets per hour from one client`);
  await takeHourly(site, `reset ${email}`, RESET_PER_ADDRESS, `at most ${RESET_PER_ADDRESS} password resets per hour for one address`);
  const user = await findUserByEmail(site, email);
  if (user) {
    await site.store.transaction(async (tx) => {
      const row = await tx.get("users", user.uuid);
      if (!row) return;
      const current = parseUser(row);
      // An invitation not yet accepted stays one: its mail is sent again instead.
      const invite = !current.password;
      const { token, stored } = issueToken(user.uuid, invite ? "invite" : "reset", invite ? site.config.inviteTtl : site.config.resetTtl, { pfp: passwordFingerprint(current) });
      await putUserToken(tx, row, "password_reset_token", stored);
      await queueMail(site, tx, invite ? inviteMail(site, current.email, token, null) : resetMail(site, current.email, token));
    }, { exclusive: "users" });
  }
  const wait = RESET_FLOOR_MS - (Date.now() - started);
  if (wait > 0) await Bun.sleep(wait);
}

/** `POST …/password-reset/confirm`: sets the password of the token's user and uses the token up. */
export async function confirmReset(site: Site, token: unknown, password: unknown): Promise<{ email: string }> {
  const t = tokenUser(token);
  if (!t) throw INVALID_LINK();
  if (typeof password !== "string" || password === "") throw new AppError(422, "INVALID_DATA", "`password` is required", { errors: { password: "is required" } });
  const def = site.resource("users");
  // The password rules first (422), so that a weak password does not use the link up.
  const values = await prepareValues(site.store, def, { password }, "update", t.user, { passwordMinLength: site.config.passwordMinLength });
  const email = await site.store.transaction(async (tx) => {
    const row = await tx.get("users", t.user);
    if (!row) throw INVALID_LINK();
    const user = parseUser(row);
    const stored = user.password_reset_token;
    // A reset link dies with the password it was issued against (changed another way since).
    if (!tokenHolds(stored, t.secret, ["reset", "invite"]) || (stored.pfp !== undefined && stored.pfp !== passwordFingerprint(user))) throw INVALID_LINK();
    await writers.updatePrepared(site, tx, def, withToken(row, "password_reset_token", null), values, actor(SYSTEM, "edit"));
    if (stored.kind === "reset" && mailConfigured(site)) await queueMail(site, tx, passwordChangedNotice(site, user.email));
    return user.email;
  }, { exclusive: "users" });
  await clearFailures(site, email);
  return { email };
}

/** A one-time reset link made by an administrator at the shell (`resd user reset-link`): no mail needed. */
export async function makeResetLink(site: Site, rawEmail: string): Promise<{ link: string; expires: number }> {
  const user = await findUserByEmail(site, checkEmail(rawEmail));
  if (!user) throw notFound(`no user with e-mail ${rawEmail}`);
  return site.store.transaction(async (tx) => {
    const row = await tx.get("users", user.uuid);
    if (!row) throw notFound(`no user with e-mail ${rawEmail}`);
    const current = parseUser(row);
    const kind: TokenKind = current.password ? "reset" : "invite";
    const { token, stored } = issueToken(user.uuid, kind, kind === "invite" ? site.config.inviteTtl : site.config.resetTtl, { pfp: passwordFingerprint(current) });
    await putUserToken(tx, row, "password_reset_token", stored);
    return { link: linkOrPath(site, token, kind), expires: stored.exp };
  }, { exclusive: "users" });
}

/** Without a public URL the CLI prints the path (the admin puts the site's address in front). */
function linkOrPath(site: Site, token: string, kind: TokenKind): string {
  const base = site.config.publicUrl;
  const full = kind === "invite" ? (base ? inviteLink(site, token) : null) : base ? resetLink(site, token) : null;
  return full ?? `/admin/reset-password?${kind === "invite" ? "invite=1&" : ""}token=${encodeURIComponent(token)}`;
}

export type Invitation = { email: string; role?: unknown; name?: unknown };

/**
 * Invites an address: a user without a password, with the role given, made by `p` under the same
 * rules as any user created through the API (create-users, and no role beyond the caller's own),
 * and a mail with a one-time link to choose a password. `mail: false` (the CLI without SMTP): the
 * link is returned instead.
 */
export async function invite(site: Site, p: Principal, body: Invitation, opts: { mail: boolean; by?: string | null }): Promise<{ user: StoredRecord; link?: string }> {
  const email = checkEmail(body.email);
  if (opts.mail) {
    requireMail(site, "an invitation");
    publicBase(site);
  }
  const fields: Record<string, unknown> = { email };
  if (body.role !== undefined) fields.role = body.role;
  if (body.name !== undefined) fields.name = body.name;
  let link: string | undefined;
  const { row } = await createRecord(site, p, "users", fields, undefined, async (tx, made) => {
    const { token, stored } = issueToken(made.uuid, "invite", site.config.inviteTtl, { pfp: passwordFingerprint(parseUser(made)) });
    await putUserToken(tx, made, "password_reset_token", stored);
    if (opts.mail) await queueMail(site, tx, inviteMail(site, email, token, opts.by ?? null));
    else link = linkOrPath(site, token, "invite");
  });
  return { user: row, link };
}

/** Sends an invitation again (a new link; the old one dies) to a user who has not chosen a password yet. */
export async function resendInvitation(site: Site, p: Principal, rawEmail: unknown, by: string | null): Promise<{ user: StoredRecord }> {
  const email = checkEmail(rawEmail);
  requireMail(site, "an invitation");
  publicBase(site);
  const user = await findUserByEmail(site, email);
  if (!user) throw notFound(`no user with e-mail ${email}`);
  authorize(p, "users", "edit", user.uuid);
  const row = await site.store.transaction(async (tx) => {
    const current = await tx.get("users", user.uuid);
    if (!current) throw notFound(`no user with e-mail ${email}`);
    const invited = parseUser(current);
    if (invited.password) throw new AppError(409, "CONFLICT", `${email} accepted the invitation already (a password is set); a reset is what they need`);
    const { token, stored } = issueToken(user.uuid, "invite", site.config.inviteTtl, { pfp: passwordFingerprint(invited) });
    await putUserToken(tx, current, "password_reset_token", stored);
    await queueMail(site, tx, inviteMail(site, email, token, by));
    return current;
  }, { exclusive: "users" });
  return { user: row };
}

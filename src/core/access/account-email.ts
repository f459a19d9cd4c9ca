/**
 * Changing one's e-mail address: the signed-in user asks with their password; a confirmation link
 * goes to the new address and a notice to the old one; the address changes only when the link is
 * opened, and only if no other account holds it by then (case-insensitive: addresses are stored
 * lower-case). Whether the new address has an account is not told when asking (no enumeration).
 */
import { AppError, unauthorized } from "../errors";
import { emailChangeMail, emailChangeNotice } from "../mail/messages";
import { publicBase, queueMail, requireMail } from "../mail/send";
import { prepareValues } from "../records/prepare";
import { actor, writers } from "../records/service";
import type { Site } from "../site";
import type { RecordReads } from "../store/types";
import { checkEmail, putUserToken, withToken } from "./account-reset";
import { invalidLink, issueToken, tokenHolds, tokenUser } from "./account-tokens";
import { SYSTEM, type Principal } from "./permissions";
import { checkPassword } from "./login";
import { parseUser } from "./users";

const INVALID_LINK = () => invalidLink("ask for the change again");

export async function requestEmailChange(site: Site, p: Principal, body: { email?: unknown; password?: unknown }): Promise<{ ok: true; pending: string }> {
  if (p.kind !== "user" || !p.uuid) throw unauthorized("changing the e-mail address needs a signed-in user");
  const email = checkEmail(body.email);
  if (typeof body.password !== "string" || body.password === "") throw new AppError(422, "INVALID_DATA", "`password` (the current one) is required", { errors: { password: "is required" } });
  requireMail(site, "an e-mail change");
  publicBase(site);
  const def = site.resource("users");
  // The new address as a users' e-mail must be (the field's own check), its uniqueness aside: told at confirmation only.
  const reads: RecordReads = { get: (r, u) => site.store.get(r, u), findBy: async () => null, findByKey: async () => null, all: (r) => site.store.all(r) };
  const checked = await prepareValues(reads, def, { email }, "update", p.uuid, { passwordMinLength: site.config.passwordMinLength });
  const me = parseUser((await site.store.get("users", p.uuid))!);
  await checkPassword(site, me, body.password);
  if (checked.email === me.email) throw new AppError(422, "INVALID_DATA", "that is the account's address already", { errors: { email: "is the current address" } });
  await site.store.transaction(async (tx) => {
    const row = await tx.get("users", p.uuid!);
    if (!row) throw unauthorized("not signed in");
    const { token, stored } = issueToken(row.uuid, "email", site.config.resetTtl, { email: checked.email as string });
    await putUserToken(tx, row, "change_email_token", stored);
    await queueMail(site, tx, emailChangeMail(site, checked.email as string, token));
    await queueMail(site, tx, emailChangeNotice(site, me.email, checked.email as string));
  }, { exclusive: "users" });
  return { ok: true, pending: checked.email as string };
}

/** Opens the confirmation link: the address changes (409 when another account took it meanwhile). */
export async function confirmEmailChange(site: Site, token: unknown): Promise<{ ok: true; email: string }> {
  const t = tokenUser(token);
  if (!t) throw INVALID_LINK();
  const def = site.resource("users");
  const email = await site.store.transaction(async (tx) => {
    const row = await tx.get("users", t.user);
    if (!row) throw INVALID_LINK();
    const stored = parseUser(row).change_email_token;
    if (!tokenHolds(stored, t.secret, ["email"]) || typeof stored.email !== "string") throw INVALID_LINK();
    const taken = await site.store.findBy("users", "email", stored.email, row.uuid);
    if (taken) throw new AppError(409, "CONFLICT", `${stored.email} belongs to another account now`);
    // The unique index on e-mail decides a race with another account taking the address (409 too).
    await writers.updatePrepared(site, tx, def, withToken(row, "change_email_token", null), { email: stored.email }, actor(SYSTEM, "edit"));
    return stored.email;
  }, { exclusive: "users" });
  return { ok: true, email };
}

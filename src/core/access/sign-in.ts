/**
 * A sign-in as a whole: the password (login.ts), then — for a user with two-factor sign-in — the
 * code (totp.ts). A session sign-in without a code gets a ticket for the code step; a token
 * request without one is refused (a script uses an API key instead, api-keys.ts).
 */
import type { Site } from "../site";
import { AppError } from "../errors";
import { credentialsFrom, login } from "./login";
import { issueTicket, secondFactor } from "./totp";
import { hasTwoFactor, type UserRow } from "./users";

export type SignIn = { user: UserRow; ticket?: undefined } | { ticket: string; user?: undefined };

export async function signIn(site: Site, body: unknown, opts: { needApi: boolean }): Promise<SignIn> {
  const c = credentialsFrom(body);
  const user = await login(site, c, opts);
  if (!hasTwoFactor(user)) return { user };
  if (c.code === undefined) {
    if (opts.needApi) throw new AppError(401, "UNAUTHORIZED", "this account has two-factor sign-in: send `code` with e-mail and password (scripts: use an API key)", { two_factor: true });
    return { ticket: await issueTicket(site, user) };
  }
  await secondFactor(site, user, c.code);
  return { user };
}

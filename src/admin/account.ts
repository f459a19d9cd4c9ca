/**
 * What the account pages share (docs/accounts.md): the pages that work without a sign-in, where the
 * profile lives, and how an account endpoint's refusal reads.
 */
import { signal } from "@preact/signals";
import { ApiError } from "./api";
import { resources } from "./state";
import { t } from "./i18n";

/** Opened from a mail or before signing in: these pages need no session. */
export const PUBLIC_PATHS = ["/admin/sign-in", "/admin/reset-password", "/admin/confirm-email"];

/**
 * The signed-in user's own page: /admin/profile, or /admin/-/profile where a resource is named
 * "profile" ("-" is no resource name).
 */
export const profilePath = () => (resources.value.profile ? "/admin/-/profile" : "/admin/profile");

/** The server's word on one field of a 422 (or 400) answer, if it named that field. */
export function fieldError(err: unknown, field: string): string {
  return err instanceof ApiError ? err.body.errors?.[field] ?? "" : "";
}

/**
 * A refusal as the reader should see it: too many tries, mail that is not set up (the server's
 * own words name what is missing), or the server's details.
 */
export function problem(err: unknown): string {
  if (!(err instanceof ApiError)) return (err as Error).message || t("The request failed. Check the connection and try again.");
  if (err.status === 429) {
    const wait = Number(err.headers.get("retry-after"));
    return wait > 0 ? t("Too many attempts. Try again in {n} seconds.", { n: wait }) : t("Too many attempts. Wait a minute and try again.");
  }
  if (err.status === 503) return t("Mail is not set up on this site: {details}", { details: err.body.details ?? err.message });
  return err.body.details || err.message;
}

/** A secret as people read it off a screen: groups of four. */
export const grouped = (s: string) => s.replace(/(.{4})(?=.)/g, "$1 ");

/** The address typed last on the sign-in or reset pages, offered again by the others. */
export const signInEmail = signal("");

/** The server's reason a password was refused, in the reader's language where it is the length rule. */
export function passwordProblem(reason: string): string {
  const short = /^must be at least (\d+) characters$/.exec(reason);
  return short ? t("The password must be at least {n} characters long.", { n: short[1] }) : t("Choose another password: it {reason}.", { reason });
}

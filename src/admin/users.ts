/**
 * The users overview's own actions (docs/accounts.md): resend an invitation, reset someone's
 * two-factor sign-in. Whether a user still has to choose a password the API does not tell (the
 * password is never shown), so "Resend invitation" is offered on every row and the server's 409
 * says when they have accepted already.
 */
import { api, ApiError } from "./api";
import { may, me } from "./state";
import { problem } from "./account";
import type { MenuItem } from "./components/RowMenu";
import type { Row } from "./rows";
import { t } from "./i18n";

export type Told = { ok: boolean; text: string };

async function resend(row: Row): Promise<Told> {
  const email = String(row.email ?? "");
  try {
    await api("POST", "/session/invitations", { email, resend: true });
    return { ok: true, text: t("Sent a new invitation to {email}; the earlier link no longer works.", { email }) };
  } catch (err) {
    if (err instanceof ApiError && err.status === 409) return { ok: false, text: t("{email} has chosen a password already, so there is no invitation to send. If they forgot it, they can ask for a reset on the sign-in page.", { email }) };
    return { ok: false, text: problem(err) };
  }
}

async function resetTwoFactor(row: Row): Promise<Told | null> {
  const who = String(row.email ?? row.uuid);
  if (!confirm(t("Turn off two-factor sign-in for {email}? They sign in with their password alone until they set it up again, and are signed out everywhere now.", { email: who }))) return null;
  try {
    await api("DELETE", `/users/${encodeURIComponent(row.uuid)}/2fa`);
    return { ok: true, text: t("Two-factor sign-in of {email} is off.", { email: who }) };
  } catch (err) {
    return { ok: false, text: problem(err) };
  }
}

/** The row menu's items for one user; `tell` shows the outcome above the list. */
export function userMenuItems(row: Row, canEdit: boolean, tell: (told: Told) => void): MenuItem[] {
  const items: MenuItem[] = [];
  // Not on one's own row: whoever is signed in has a password.
  if (canEdit && typeof row.email === "string" && row.uuid !== me.value?.uuid) items.push({ label: t("Resend invitation"), onSelect: () => void resend(row).then(tell) });
  if (row.two_factor === true && may("manage-users")) items.push({ label: t("Reset two-factor sign-in"), danger: true, onSelect: () => void resetTwoFactor(row).then((r) => r && tell(r)) });
  return items;
}

/**
 * The users overview's "Invite": an address, a name and a role for POST /api/v1/session/invitations.
 * The invitee gets a mail with a link to choose their password; nobody can sign in as them before.
 * Roles are offered when the inviter may see them (the server refuses a role beyond their own).
 */
import { useEffect } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { api, query, type Envelope } from "../api";
import { resources } from "../state";
import { fieldError, problem } from "../account";
import { Dialog } from "./Dialog";
import { t } from "../i18n";

type Role = { uuid: string; name: string };

export function InviteDialog({ onInvited, onClose }: { onInvited: (email: string) => void; onClose: () => void }) {
  const roles = useSignal<Role[]>([]);
  const busy = useSignal(false);
  const error = useSignal("");
  useEffect(() => {
    if (!resources.value.roles) return;
    void api<Envelope & { roles: Record<string, { name: string }> }>("GET", `/roles${query({ limit: 100, sort: "name|asc" })}`)
      .then((r) => (roles.value = Object.entries(r.body.roles ?? {}).map(([uuid, v]) => ({ uuid, name: v.name }))))
      .catch(() => undefined);
  }, []);
  const submit = async (e: Event) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    const email = String(form.get("email") ?? "").trim();
    const name = String(form.get("name") ?? "").trim();
    const role = String(form.get("role") ?? "");
    busy.value = true;
    error.value = "";
    try {
      await api("POST", "/session/invitations", { email, ...(name ? { name } : {}), ...(role ? { role } : {}) });
      onInvited(email);
    } catch (err) {
      error.value = fieldError(err, "email") ? `${t("E-mail")}: ${fieldError(err, "email")}` : problem(err);
    } finally {
      busy.value = false;
    }
  };
  return (
    <Dialog title={t("Invite someone")} onClose={onClose}>
      <form class="account-form" onSubmit={submit}>
        <p>{t("They get a mail with a link to choose their password. Until then nobody can sign in as them.")}</p>
        <label>{t("E-mail")}<input name="email" type="email" required autofocus /></label>
        <label>{t("Name")}<input name="name" maxLength={200} /></label>
        {roles.value.length > 0 && (
          <label>{t("Role")}<select name="role"><option value="">{t("no role")}</option>{roles.value.map((r) => <option key={r.uuid} value={r.uuid}>{r.name}</option>)}</select></label>
        )}
        {error.value && <p class="error" role="alert">{error.value}</p>}
        <div class="account-actions"><button type="submit" class="primary" disabled={busy.value}>{busy.value ? t("Sending…") : t("Send the invitation")}</button></div>
      </form>
    </Dialog>
  );
}

/**
 * The profile's e-mail change: the new address and the password, for
 * POST /api/v1/session/email-change. Nothing changes until the link mailed to the new address is
 * opened (/admin/confirm-email).
 */
import { useId } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { api, ApiError, type Envelope } from "../api";
import { fieldError, problem } from "../account";
import { t } from "../i18n";

export function EmailChange({ current }: { current: string }) {
  const id = useId();
  const busy = useSignal(false);
  const error = useSignal("");
  const pending = useSignal<string | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    const el = e.currentTarget as HTMLFormElement;
    const form = new FormData(el);
    pending.value = null;
    error.value = "";
    busy.value = true;
    try {
      const r = await api<Envelope & { pending: string }>("POST", "/session/email-change", { email: String(form.get("email") ?? "").trim(), password: form.get("password") });
      el.reset();
      pending.value = r.body.pending;
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) error.value = t("The password is wrong.");
      else if (fieldError(err, "email") === "is the current address") error.value = t("That is your address already.");
      else if (fieldError(err, "email")) error.value = t("That is no e-mail address.");
      else error.value = problem(err);
    } finally {
      busy.value = false;
    }
  };
  return (
    <form class="account-form" onSubmit={submit} aria-labelledby={`${id}-h`}>
      <h2 id={`${id}-h`}>{t("E-mail address")}</h2>
      <p>{t("You sign in with {email}. To change it, give the new address: a link to confirm it goes there.", { email: current })}</p>
      <label>{t("New e-mail address")}<input name="email" type="email" autocomplete="email" required /></label>
      <label>{t("Your password")}<input name="password" type="password" autocomplete="current-password" required /></label>
      {error.value && <p class="error" role="alert">{error.value}</p>}
      {pending.value && <p class="ok" role="status">{t("Check your new mailbox: we sent a link to {email}. Your address stays {current} until you open it.", { email: pending.value, current })}</p>}
      <div><button type="submit" class="primary" disabled={busy.value}>{busy.value ? t("Sending…") : t("Change e-mail address")}</button></div>
    </form>
  );
}

/**
 * "Forgot password?": the address goes to POST /api/v1/session/password-reset, which answers the
 * same whether the address has an account (no one learns who has one), so the page says a mail is
 * on its way if it has. Too many asks (429) and a site without mail (503) are said as such.
 */
import { useSignal } from "@preact/signals";
import { api } from "../api";
import { problem, signInEmail } from "../account";
import { t } from "../i18n";

export function ForgotPassword({ onBack }: { onBack: () => void }) {
  const busy = useSignal(false);
  const error = useSignal("");
  const sent = useSignal<string | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    const email = String(new FormData(e.currentTarget as HTMLFormElement).get("email") ?? "").trim();
    signInEmail.value = email;
    busy.value = true;
    error.value = "";
    try {
      await api("POST", "/session/password-reset", { email });
      sent.value = email;
    } catch (err) {
      error.value = problem(err);
    } finally {
      busy.value = false;
    }
  };
  if (sent.value !== null) {
    return (
      <section class="account-box" aria-labelledby="forgot-title">
        <h1 id="forgot-title">{t("Check your mailbox")}</h1>
        <p role="status" class="ok">{t("If {email} has an account, a mail with a link to set a new password is on its way.", { email: sent.value })}</p>
        <p class="muted">{t("No mail after a few minutes? Look in the spam folder, or ask again.")}</p>
        <button type="button" onClick={onBack}>{t("Back to sign-in")}</button>
      </section>
    );
  }
  return (
    <form onSubmit={submit} aria-labelledby="forgot-title">
      <h1 id="forgot-title">{t("Forgot password?")}</h1>
      <p>{t("Give your e-mail address: we send a link to set a new password.")}</p>
      <label>{t("E-mail")}<input name="email" type="email" autocomplete="username" required autofocus defaultValue={signInEmail.peek()} onInput={(e) => (signInEmail.value = (e.currentTarget as HTMLInputElement).value.trim())} /></label>
      {error.value && <p class="error" role="alert">{error.value}</p>}
      <button type="submit" class="primary" disabled={busy.value}>{busy.value ? t("Sending…") : t("Send the link")}</button>
      <button type="button" class="link" onClick={onBack}>{t("Back to sign-in")}</button>
    </form>
  );
}

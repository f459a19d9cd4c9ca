/**
 * The second step of a sign-in for a user with two-factor sign-in: the code from their
 * authenticator app, or one of their recovery codes, with the ticket the password step gave
 * (POST /api/v1/session/2fa). A ticket that is gone (used, or older than five minutes) starts the
 * sign-in over.
 */
import { useSignal } from "@preact/signals";
import { api, ApiError } from "../api";
import { problem } from "../account";
import { t } from "../i18n";

export function TwoFactorStep({ ticket, onDone, onRestart }: { ticket: string; onDone: () => void; onRestart: (why: string) => void }) {
  const busy = useSignal(false);
  const error = useSignal("");
  const submit = async (e: Event) => {
    e.preventDefault();
    const input = (e.currentTarget as HTMLFormElement).elements.namedItem("code") as HTMLInputElement;
    busy.value = true;
    error.value = "";
    try {
      await api("POST", "/session/2fa", { ticket, code: input.value.trim() });
      onDone();
    } catch (err) {
      if (err instanceof ApiError && err.status === 401 && err.body.two_factor) {
        error.value = t("The code is wrong or was used already. Wait for the next one and try again.");
        input.select();
      } else if (err instanceof ApiError && err.status === 401) onRestart(t("The sign-in took too long. Sign in again."));
      else error.value = problem(err);
    } finally {
      busy.value = false;
    }
  };
  return (
    <form onSubmit={submit} aria-labelledby="code-title" class="two-factor-step">
      <h1 id="code-title">{t("Two-factor sign-in")}</h1>
      <p id="code-help">{t("Enter the 6-digit code your authenticator app shows, or one of your recovery codes.")}</p>
      <label>{t("Code")}<input name="code" autocomplete="one-time-code" autocapitalize="none" spellcheck={false} required autofocus aria-describedby="code-help" maxLength={40} /></label>
      {error.value && <p class="error" role="alert">{error.value}</p>}
      <button type="submit" class="primary" disabled={busy.value}>{busy.value ? t("Checking…") : t("Sign in")}</button>
      <button type="button" class="link" onClick={() => onRestart("")}>{t("Back to sign-in")}</button>
    </form>
  );
}

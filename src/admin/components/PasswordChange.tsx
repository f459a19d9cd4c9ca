/**
 * The profile's password change: the current password and the new one twice, for
 * POST /api/v1/session/password. The server ends the user's other sessions and tokens and signs
 * this page in anew.
 */
import { useId } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { api, ApiError } from "../api";
import { fieldError, passwordProblem, problem } from "../account";
import { t } from "../i18n";

export function PasswordChange() {
  const id = useId();
  const busy = useSignal(false);
  const error = useSignal("");
  const done = useSignal(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const el = e.currentTarget as HTMLFormElement;
    const form = new FormData(el);
    done.value = false;
    error.value = "";
    if (form.get("new_password") !== form.get("repeat")) {
      error.value = t("The two new passwords differ.");
      return;
    }
    busy.value = true;
    try {
      await api("POST", "/session/password", { password: form.get("password"), new_password: form.get("new_password") });
      el.reset();
      done.value = true;
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) error.value = t("The current password is wrong.");
      else if (fieldError(err, "new_password")) error.value = passwordProblem(fieldError(err, "new_password"));
      else error.value = problem(err);
    } finally {
      busy.value = false;
    }
  };
  return (
    <form class="account-form" onSubmit={submit} aria-labelledby={`${id}-h`}>
      <h2 id={`${id}-h`}>{t("Password")}</h2>
      <label>{t("Current password")}<input name="password" type="password" autocomplete="current-password" required /></label>
      <label>{t("New password")}<input name="new_password" type="password" autocomplete="new-password" required /></label>
      <label>{t("Repeat the new password")}<input name="repeat" type="password" autocomplete="new-password" required /></label>
      {error.value && <p class="error" role="alert">{error.value}</p>}
      {done.value && <p class="ok" role="status">{t("Password changed. Wherever else you were signed in, you are signed out now.")}</p>}
      <div><button type="submit" class="primary" disabled={busy.value}>{busy.value ? t("Saving…") : t("Change password")}</button></div>
    </form>
  );
}

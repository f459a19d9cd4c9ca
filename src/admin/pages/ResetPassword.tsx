/**
 * `/admin/reset-password?token=…` (a reset link) and `?invite=1&token=…` (an invitation): the new
 * password twice, then POST /api/v1/session/password-reset/confirm. Opened from a mail, so it works
 * without a session. A link that is used, expired or replaced says so and offers a new one.
 */
import { useSignal } from "@preact/signals";
import { api, ApiError } from "../api";
import { location } from "../router";
import { fieldError, passwordProblem, problem, signInEmail } from "../account";
import { t } from "../i18n";

function BadLink({ invite }: { invite: boolean }) {
  return (
    <section class="account-box" aria-labelledby="reset-title">
      <h1 id="reset-title">{t("This link does not work any more")}</h1>
      <p role="alert" class="error">{t("It was used already, it expired, or a newer link was sent since.")}</p>
      <p>{invite ? t("Ask for a new link below, or ask whoever invited you to send the invitation again.") : t("Ask for a new link and use the newest mail.")}</p>
      <p><a class="button primary" href="/admin/sign-in?forgot=1">{t("Ask for a new link")}</a></p>
    </section>
  );
}

export function ResetPassword() {
  const params = location.value.params;
  const token = params.get("token") ?? "";
  const invite = params.get("invite") === "1";
  const busy = useSignal(false);
  const error = useSignal("");
  const mismatch = useSignal(false);
  const badLink = useSignal(token === "");
  const done = useSignal<string | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    const password = String(form.get("password") ?? "");
    error.value = "";
    mismatch.value = password !== form.get("repeat");
    if (mismatch.value) return;
    busy.value = true;
    try {
      const r = await api<import("../api").Envelope & { email: string }>("POST", "/session/password-reset/confirm", { token, password });
      signInEmail.value = r.body.email;
      done.value = r.body.email;
    } catch (err) {
      if (err instanceof ApiError && err.status === 400 && fieldError(err, "token")) badLink.value = true;
      else error.value = fieldError(err, "password") ? passwordProblem(fieldError(err, "password")) : problem(err);
    } finally {
      busy.value = false;
    }
  };
  let body;
  if (badLink.value) body = <BadLink invite={invite} />;
  else if (done.value !== null) {
    body = (
      <section class="account-box" aria-labelledby="reset-title">
        <h1 id="reset-title">{t("Password set")}</h1>
        <p role="status" class="ok">{t("Sign in as {email} with your new password.", { email: done.value })}</p>
        <p><a class="button primary" href="/admin/sign-in">{t("Sign in")}</a></p>
      </section>
    );
  } else {
    body = (
      <form onSubmit={submit} aria-labelledby="reset-title">
        <h1 id="reset-title">{invite ? t("Choose your password") : t("Set a new password")}</h1>
        {invite && <p>{t("You were invited to this site. Choose the password you will sign in with.")}</p>}
        <label>{t("New password")}<input name="password" type="password" autocomplete="new-password" required autofocus aria-invalid={error.value ? true : undefined} /></label>
        <label>{t("Repeat the new password")}<input name="repeat" type="password" autocomplete="new-password" required aria-invalid={mismatch.value || undefined} /></label>
        {mismatch.value && <p class="error" role="alert">{t("The two passwords differ.")}</p>}
        {error.value && <p class="error" role="alert">{error.value}</p>}
        <button type="submit" class="primary" disabled={busy.value}>{busy.value ? t("Saving…") : invite ? t("Set my password") : t("Set the new password")}</button>
      </form>
    );
  }
  return <main class="signin">{body}</main>;
}

/** Sign-in on POST /api/v1/session; afterwards back to the page the user came from. */
import { useSignal } from "@preact/signals";
import { api, ApiError } from "../api";
import { location, navigate } from "../router";
import { loadMeta } from "../state";
import { t } from "../i18n";

export function SignIn() {
  const error = useSignal("");
  const busy = useSignal(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    busy.value = true;
    error.value = "";
    try {
      await api("POST", "/session", { email: form.get("email"), password: form.get("password") });
      await loadMeta();
      const next = location.value.params.get("next") ?? "/admin";
      navigate(next.startsWith("/admin") && !next.startsWith("/admin/sign-in") ? next : "/admin", true);
    } catch (err) {
      error.value = err instanceof ApiError && err.status === 401 ? t("E-mail or password is wrong.") : err instanceof ApiError && err.status === 429 ? t("Too many attempts. Wait a minute and try again.") : (err as Error).message;
    } finally {
      busy.value = false;
    }
  };
  return (
    <main class="signin">
      <form onSubmit={submit} aria-labelledby="signin-title">
        <h1 id="signin-title">{t("Sign in")}</h1>
        <label>{t("E-mail")}<input name="email" type="email" autocomplete="username" required autofocus /></label>
        <label>{t("Password")}<input name="password" type="password" autocomplete="current-password" required /></label>
        {error.value && <p class="error" role="alert">{error.value}</p>}
        <button type="submit" disabled={busy.value}>{busy.value ? t("Signing in…") : t("Sign in")}</button>
      </form>
    </main>
  );
}

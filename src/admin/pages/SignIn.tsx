/**
 * Sign-in on POST /api/v1/session; afterwards back to the page the user came from. A user with
 * two-factor sign-in gets a ticket instead of a session, and the page asks for the code (or a
 * recovery code) for POST /api/v1/session/2fa. "Forgot password?" asks for a reset link
 * (docs/accounts.md); `?forgot=1` opens that form at once (the reset page's "ask for a new link").
 */
import { useSignal } from "@preact/signals";
import { api, ApiError } from "../api";
import { location, navigate } from "../router";
import { loadMeta } from "../state";
import { signInEmail } from "../account";
import { ForgotPassword } from "../components/ForgotPassword";
import { TwoFactorStep } from "../components/TwoFactorStep";
import { t } from "../i18n";

type Answer = { two_factor?: boolean; ticket?: string };

/** Signed in: the app's meta, then the page the user came from. */
export async function enter(): Promise<void> {
  await loadMeta();
  const next = location.value.params.get("next") ?? "/admin";
  navigate(next.startsWith("/admin") && !next.startsWith("/admin/sign-in") ? next : "/admin", true);
}

export function SignIn() {
  const error = useSignal("");
  const busy = useSignal(false);
  const ticket = useSignal<string | null>(null);
  const forgot = useSignal(location.value.params.get("forgot") === "1");
  const submit = async (e: Event) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    busy.value = true;
    error.value = "";
    try {
      const r = await api<Answer & import("../api").Envelope>("POST", "/session", { email: form.get("email"), password: form.get("password") });
      if (r.body.two_factor && r.body.ticket) {
        ticket.value = r.body.ticket;
        return;
      }
      await enter();
    } catch (err) {
      // 403: no account has the address (the server says so; the page need not).
      const wrong = err instanceof ApiError && (err.status === 401 || (err.status === 403 && err.body.message === "ACCESS_DENIED"));
      error.value = wrong ? t("E-mail or password is wrong.") : err instanceof ApiError && err.status === 429 ? t("Too many attempts. Wait a minute and try again.") : (err as Error).message;
    } finally {
      busy.value = false;
    }
  };
  if (ticket.value) {
    return <main class="signin"><TwoFactorStep ticket={ticket.value} onDone={() => void enter()} onRestart={(why) => { ticket.value = null; error.value = why; }} /></main>;
  }
  if (forgot.value) return <main class="signin"><ForgotPassword onBack={() => (forgot.value = false)} /></main>;
  return (
    <main class="signin">
      <form onSubmit={submit} aria-labelledby="signin-title">
        <h1 id="signin-title">{t("Sign in")}</h1>
        <label>{t("E-mail")}<input name="email" type="email" autocomplete="username" required autofocus defaultValue={signInEmail.peek()} onInput={(e) => (signInEmail.value = (e.currentTarget as HTMLInputElement).value.trim())} /></label>
        <label>{t("Password")}<input name="password" type="password" autocomplete="current-password" required /></label>
        {error.value && <p class="error" role="alert">{error.value}</p>}
        <button type="submit" disabled={busy.value}>{busy.value ? t("Signing in…") : t("Sign in")}</button>
        <button type="button" class="link forgot" onClick={() => (forgot.value = true)}>{t("Forgot password?")}</button>
      </form>
    </main>
  );
}

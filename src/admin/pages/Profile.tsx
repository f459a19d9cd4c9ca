/**
 * The signed-in user's own page (/admin/profile, reached from their name in the top bar): the
 * password, the e-mail address, two-factor sign-in and personal API keys (docs/accounts.md). A
 * member whose role requires two-factor sign-in and who has not set it up sees only that part,
 * whatever page they opened, with the reason.
 */
import { useEffect } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { api, type Envelope } from "../api";
import { me, mustEnrol2fa } from "../state";
import { problem } from "../account";
import { PasswordChange } from "../components/PasswordChange";
import { EmailChange } from "../components/EmailChange";
import { TwoFactor } from "../components/TwoFactor";
import { ApiKeys } from "../components/ApiKeys";
import { t } from "../i18n";

type SessionUser = { uuid: string; email: string; name?: string; two_factor?: boolean };

export function Profile() {
  const user = useSignal<SessionUser | null>(null);
  const error = useSignal("");
  useEffect(() => {
    api<Envelope & { user: SessionUser }>("GET", "/session")
      .then((r) => (user.value = r.body.user))
      .catch((err: unknown) => (error.value = problem(err)));
  }, []);
  const must = mustEnrol2fa.value;
  const u = user.value;
  return (
    <main class="page profile" aria-busy={!u && !error.value}>
      <h1>{t("Your profile")}</h1>
      <p class="muted">{t("Signed in as {email}", { email: u?.email ?? me.value?.email ?? "" })}</p>
      {must && (
        <div class="account-card must-enrol" role="alert">
          <strong>{t("Set up two-factor sign-in to continue.")}</strong>{" "}
          {t("Your role requires a code from an authenticator app at every sign-in. Until it is set up, the admin shows nothing else.")}
        </div>
      )}
      {error.value && <p class="error" role="alert">{error.value}</p>}
      {u && (
        <div class="account-grid">
          {!must && <div class="account-card"><PasswordChange /></div>}
          {!must && <div class="account-card"><EmailChange current={u.email} /></div>}
          <TwoFactor enabled={u.two_factor === true} mustEnrol={must} onChange={(on) => (user.value = { ...u, two_factor: on })} />
          {!must && <ApiKeys />}
        </div>
      )}
    </main>
  );
}

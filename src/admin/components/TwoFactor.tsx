/**
 * The profile's two-factor sign-in (docs/accounts.md): set it up (the password, then a QR code made
 * in the browser and the secret as text, confirmed with a first code; then the recovery codes,
 * shown once), and once on: new recovery codes, or turn it off (each with the password and a code).
 * A member whose role requires it and who has none is shown this alone (`mustEnrol`).
 */
import { useId } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { api, ApiError, type Envelope } from "../api";
import { loadMeta } from "../state";
import { grouped, problem } from "../account";
import { QrCode } from "./QrCode";
import { CopyButton } from "./CopyButton";
import { RecoveryCodes } from "./RecoveryCodes";
import { t } from "../i18n";

type Step =
  | { kind: "idle" }
  | { kind: "password" }
  | { kind: "scan"; secret: string; url: string }
  | { kind: "codes"; codes: string[] }
  | { kind: "disable" }
  | { kind: "renew" };

/** A wrong password and a wrong code are both 401; the code's names `two_factor`. */
function refusal(err: unknown): string {
  if (err instanceof ApiError && err.status === 401) return err.body.two_factor ? t("The code is wrong or was used already. Wait for the next one and try again.") : t("The password is wrong.");
  return problem(err);
}

export function TwoFactor({ enabled, mustEnrol, onChange }: { enabled: boolean; mustEnrol: boolean; onChange: (on: boolean) => void }) {
  const id = useId();
  const step = useSignal<Step>(mustEnrol && !enabled ? { kind: "password" } : { kind: "idle" });
  const busy = useSignal(false);
  const error = useSignal("");
  const notice = useSignal("");
  const go = (s: Step) => { step.value = s; error.value = ""; notice.value = ""; };
  const run = async (e: Event, fn: (form: FormData) => Promise<void>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    busy.value = true;
    error.value = "";
    try {
      await fn(form);
    } catch (err) {
      error.value = refusal(err);
    } finally {
      busy.value = false;
    }
  };
  const enrol = (e: Event) => run(e, async (form) => {
    const r = await api<Envelope & { secret: string; otpauth_url: string }>("POST", "/session/2fa/enrol", { password: form.get("password") });
    go({ kind: "scan", secret: r.body.secret, url: r.body.otpauth_url });
  });
  const confirm = (e: Event) => run(e, async (form) => {
    const r = await api<Envelope & { recovery_codes: string[] }>("POST", "/session/2fa/confirm", { code: String(form.get("code") ?? "").trim() });
    go({ kind: "codes", codes: r.body.recovery_codes });
    onChange(true);
  });
  const disable = (e: Event) => run(e, async (form) => {
    await api("POST", "/session/2fa/disable", { password: form.get("password"), code: String(form.get("code") ?? "").trim() });
    go({ kind: "idle" });
    notice.value = t("Two-factor sign-in is off.");
    onChange(false);
  });
  const renew = (e: Event) => run(e, async (form) => {
    const r = await api<Envelope & { recovery_codes: string[] }>("POST", "/session/2fa/recovery-codes", { password: form.get("password"), code: String(form.get("code") ?? "").trim() });
    go({ kind: "codes", codes: r.body.recovery_codes });
  });
  const saved = () => {
    go({ kind: "idle" });
    notice.value = t("Two-factor sign-in is on.");
    // The member who had to enrol first may now use the rest of the admin.
    if (mustEnrol) void loadMeta();
  };

  const s = step.value;
  const errorLine = error.value && <p class="error" role="alert">{error.value}</p>;
  const cancel = !mustEnrol && <button type="button" class="link" onClick={() => go({ kind: "idle" })}>{t("Cancel")}</button>;
  /** The password and a code, for turning it off and for new recovery codes. */
  const confirmForm = (onSubmit: (e: Event) => Promise<void>, text: string, button: string) => (
    <form class="account-form" onSubmit={onSubmit}>
      <p>{text}</p>
      <label>{t("Your password")}<input name="password" type="password" autocomplete="current-password" required autofocus /></label>
      <label>{t("Code from the app, or a recovery code")}<input name="code" autocomplete="one-time-code" autocapitalize="none" spellcheck={false} required maxLength={40} /></label>
      {errorLine}
      <div class="account-actions"><button type="submit" class="primary" disabled={busy.value}>{button}</button>{cancel}</div>
    </form>
  );

  let body;
  if (s.kind === "codes") body = <RecoveryCodes codes={s.codes} onSaved={saved} />;
  else if (s.kind === "password") {
    body = (
      <form class="account-form" onSubmit={enrol}>
        <p>{t("Two-factor sign-in asks for a code from an app on your phone after the password. First, confirm it is you.")}</p>
        <label>{t("Your password")}<input name="password" type="password" autocomplete="current-password" required autofocus /></label>
        {errorLine}
        <div class="account-actions"><button type="submit" class="primary" disabled={busy.value}>{t("Continue")}</button>{cancel}</div>
      </form>
    );
  } else if (s.kind === "scan") {
    body = (
      <div class="enrol">
        <ol>
          <li>
            <p>{t("Scan this QR code with an authenticator app (for example Aegis, FreeOTP, Google Authenticator or 1Password).")}</p>
            <QrCode value={s.url} label={t("QR code for your authenticator app")} />
            <p>{t("Cannot scan it? Enter this key in the app:")} <code class="secret" data-secret={s.secret}>{grouped(s.secret)}</code></p>
            <CopyButton text={s.secret} label={t("Copy the key")} />
          </li>
          <li>
            <form class="account-form" onSubmit={confirm}>
              <label>{t("The 6-digit code the app shows")}<input name="code" inputMode="numeric" autocomplete="one-time-code" required maxLength={7} /></label>
              {errorLine}
              <div class="account-actions"><button type="submit" class="primary" disabled={busy.value}>{t("Turn on two-factor sign-in")}</button>{cancel}</div>
            </form>
          </li>
        </ol>
      </div>
    );
  } else if (s.kind === "disable") body = confirmForm(disable, t("Turning it off makes your password alone enough to sign in."), t("Turn off"));
  else if (s.kind === "renew") body = confirmForm(renew, t("New codes replace the old ones, which stop working."), t("Make new recovery codes"));
  else {
    body = enabled ? (
      <div class="account-actions">
        <button type="button" onClick={() => go({ kind: "renew" })}>{t("New recovery codes")}</button>
        <button type="button" class="danger" onClick={() => go({ kind: "disable" })}>{t("Turn off two-factor sign-in")}</button>
      </div>
    ) : <div><button type="button" class="primary" onClick={() => go({ kind: "password" })}>{t("Set up two-factor sign-in")}</button></div>;
  }
  return (
    <section id="two-factor" class="account-card" aria-labelledby={`${id}-h`}>
      <h2 id={`${id}-h`}>{t("Two-factor sign-in")}</h2>
      <p data-two-factor={enabled ? "on" : "off"}><strong>{enabled ? t("On:") : t("Off:")}</strong> {enabled ? t("signing in asks for a code from your authenticator app.") : t("your password alone signs you in.")}</p>
      {notice.value && <p class="ok" role="status">{notice.value}</p>}
      {body}
    </section>
  );
}

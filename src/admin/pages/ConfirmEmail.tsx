/**
 * `/admin/confirm-email?token=…`, opened from the confirmation mail of an e-mail change: confirms it
 * at once (POST /api/v1/session/email-change/confirm; the link is the proof, no session needed) and
 * shows the new address, or why it did not change.
 */
import { useEffect, useRef } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { api, ApiError, type Envelope } from "../api";
import { location } from "../router";
import { loadMeta, status } from "../state";
import { problem, signInEmail } from "../account";
import { t } from "../i18n";

type Outcome = { email: string } | { error: "link" | "taken" | "other"; text: string };

export function ConfirmEmail() {
  const token = location.value.params.get("token") ?? "";
  const outcome = useSignal<Outcome | null>(token ? null : { error: "link", text: "" });
  const asked = useRef(false);
  useEffect(() => {
    if (!token || asked.current) return;
    asked.current = true;
    api<Envelope & { email: string }>("POST", "/session/email-change/confirm", { token })
      .then((r) => {
        outcome.value = { email: r.body.email };
        signInEmail.value = r.body.email;
        // Signed in already (this browser): the top bar shows the new address.
        if (status.value === "in") void loadMeta();
      })
      .catch((err: unknown) => {
        const kind = err instanceof ApiError && err.status === 409 ? "taken" : err instanceof ApiError && err.status === 400 ? "link" : "other";
        outcome.value = { error: kind, text: problem(err) };
      });
  }, [token]);
  const o = outcome.value;
  return (
    <main class="signin">
      <section class="account-box" aria-labelledby="confirm-title" aria-busy={o === null}>
        {o === null && <><h1 id="confirm-title">{t("Confirming your new e-mail address…")}</h1><p role="status">{t("One moment.")}</p></>}
        {o && "email" in o && (
          <>
            <h1 id="confirm-title">{t("E-mail address changed")}</h1>
            <p role="status" class="ok" data-email={o.email}>{t("Your account's address is now {email}. Sign in with it from now on.", { email: o.email })}</p>
            <p><a class="button primary" href="/admin">{t("Go to the admin")}</a></p>
          </>
        )}
        {o && "error" in o && (
          <>
            <h1 id="confirm-title">{t("The address did not change")}</h1>
            <p role="alert" class="error">
              {o.error === "taken" ? t("Another account uses this address by now. Ask for the change again with another address.")
                : o.error === "link" ? t("This link does not work any more: it was used already, it expired, or a newer one was sent. Ask for the change again on your profile page.")
                : o.text}
            </p>
            <p><a class="button" href="/admin">{t("Go to the admin")}</a></p>
          </>
        )}
      </section>
    </main>
  );
}

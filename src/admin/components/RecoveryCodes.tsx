/**
 * Recovery codes, shown the one time the server hands them out: each signs in once without the
 * app. Copy and download, and a button to say they are kept safe.
 */
import { CopyButton } from "./CopyButton";
import { t } from "../i18n";

export function RecoveryCodes({ codes, onSaved }: { codes: string[]; onSaved: () => void }) {
  const text = `${codes.join("\n")}\n`;
  return (
    <div class="recovery-codes" role="region" aria-labelledby="recovery-title">
      <h3 id="recovery-title">{t("Your recovery codes")}</h3>
      <p>{t("Each code signs you in once when your app is not at hand. They are shown only now: copy or download them and keep them somewhere safe.")}</p>
      <ol>{codes.map((c) => <li key={c}><code>{c}</code></li>)}</ol>
      <div class="account-actions">
        <CopyButton text={text} label={t("Copy the codes")} />
        <a class="button" href={`data:text/plain;charset=utf-8,${encodeURIComponent(text)}`} download="recovery-codes.txt">{t("Download the codes")}</a>
        <button type="button" class="primary" onClick={onSaved}>{t("I have saved them")}</button>
      </div>
    </div>
  );
}

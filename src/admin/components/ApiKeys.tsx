/**
 * The profile's personal API keys (GET/POST /api/v1/session/api-keys, DELETE …/{id}): long-lived
 * credentials for scripts, named, with an optional expiry and optionally fewer rights than the
 * user's. A new key is shown once, with a copy button; revoking one stops it at once.
 */
import { useEffect, useId } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { api, ApiError, type Envelope } from "../api";
import { fieldError, problem } from "../account";
import { PermissionEditor } from "./PermissionEditor";
import { CopyButton } from "./CopyButton";
import { t, when } from "../i18n";

type Key = { id: string; name: string; created: number; expires: number | null; last_used: number | null; permissions: string[] | null };

const date = (sec: number | null, none: string) => (sec === null ? none : when(sec * 1000));

function NewKey({ made, onDone }: { made: Key & { key: string }; onDone: () => void }) {
  return (
    <div class="new-key" role="region" aria-labelledby="new-key-title">
      <h3 id="new-key-title">{t("Your new key “{name}”", { name: made.name })}</h3>
      <p>{t("Copy it now: it is not shown again. Scripts send it as the header Authorization: Bearer <key>.")}</p>
      <input class="key" readOnly value={made.key} aria-label={t("API key")} data-key onFocus={(e) => (e.currentTarget as HTMLInputElement).select()} />
      <div class="account-actions">
        <CopyButton text={made.key} label={t("Copy the key")} />
        <button type="button" class="primary" onClick={onDone}>{t("Done")}</button>
      </div>
    </div>
  );
}

export function ApiKeys() {
  const id = useId();
  const keys = useSignal<Key[] | null>(null);
  const error = useSignal("");
  const formError = useSignal("");
  const notice = useSignal("");
  const busy = useSignal(false);
  const limit = useSignal(false);
  const chosen = useSignal<string[]>([]);
  const made = useSignal<(Key & { key: string }) | null>(null);

  const load = async () => {
    try {
      keys.value = (await api<Envelope & { keys: Key[] }>("GET", "/session/api-keys")).body.keys;
      error.value = "";
    } catch (err) {
      error.value = problem(err);
    }
  };
  useEffect(() => { void load(); }, []);

  const create = async (e: Event) => {
    e.preventDefault();
    const el = e.currentTarget as HTMLFormElement;
    const form = new FormData(el);
    const days = String(form.get("days") ?? "").trim();
    formError.value = "";
    notice.value = "";
    if (limit.value && chosen.value.length === 0) {
      formError.value = t("Choose at least one permission for the key, or give it all of your rights.");
      return;
    }
    busy.value = true;
    try {
      const r = await api<Envelope & Key & { key: string }>("POST", "/session/api-keys", {
        name: String(form.get("name") ?? "").trim(),
        password: form.get("password"),
        ...(days ? { expires_in_days: Number(days) } : {}),
        ...(limit.value ? { permissions: chosen.value } : {}),
      });
      made.value = r.body;
      el.reset();
      limit.value = false;
      chosen.value = [];
      await load();
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) formError.value = t("The password is wrong.");
      else {
        const fields = ["name", "expires_in_days", "permissions"].map((f) => fieldError(err, f) && `${f === "name" ? t("Name") : f === "permissions" ? t("Permissions") : t("Expires after (days)")}: ${fieldError(err, f)}`).filter(Boolean);
        formError.value = fields.length ? fields.join(" · ") : problem(err);
      }
    } finally {
      busy.value = false;
    }
  };

  const revoke = async (k: Key) => {
    if (!confirm(t("Revoke the key “{name}”? Scripts that use it stop working at once.", { name: k.name }))) return;
    try {
      await api("DELETE", `/session/api-keys/${encodeURIComponent(k.id)}`);
      notice.value = t("Revoked “{name}”.", { name: k.name });
      await load();
    } catch (err) {
      error.value = problem(err);
    }
  };

  const list = keys.value;
  return (
    <section class="account-card api-keys" aria-labelledby={`${id}-h`}>
      <h2 id={`${id}-h`}>{t("API keys")}</h2>
      <p>{t("Keys let scripts and CI pipelines use the API as you, without your password. Each has your rights or fewer.")}</p>
      {error.value && <p class="error" role="alert">{error.value}</p>}
      {notice.value && <p class="ok" role="status">{notice.value}</p>}
      {made.value && <NewKey made={made.value} onDone={() => (made.value = null)} />}
      {list && list.length === 0 && <p class="muted">{t("You have no API keys.")}</p>}
      {list && list.length > 0 && (
        <div class="table-wrap">
          <table class="keys">
            <caption class="sr-only">{t("Your API keys")}</caption>
            <thead><tr><th scope="col">{t("Name")}</th><th scope="col">{t("Created")}</th><th scope="col">{t("Expires")}</th><th scope="col">{t("Last used")}</th><th scope="col">{t("Rights")}</th><th scope="col"><span class="sr-only">{t("Actions")}</span></th></tr></thead>
            <tbody>
              {list.map((k) => (
                <tr key={k.id} data-key-id={k.id}>
                  <th scope="row">{k.name}</th>
                  <td>{date(k.created, "")}</td>
                  <td>{date(k.expires, t("never"))}</td>
                  <td>{date(k.last_used, t("not yet"))}</td>
                  <td>{k.permissions === null ? t("all of yours") : k.permissions.map((p) => <span key={p} class="chip">{p}</span>)}</td>
                  <td><button type="button" class="danger" aria-label={t("Revoke {name}", { name: k.name })} onClick={() => void revoke(k)}>{t("Revoke")}</button></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <form class="account-form" onSubmit={create} aria-labelledby={`${id}-new`}>
        <h3 id={`${id}-new`}>{t("New key")}</h3>
        <label>{t("Name")}<input name="name" required maxLength={100} placeholder={t("for example: CI deploy")} /></label>
        <label>{t("Expires after (days)")}<input name="days" type="number" min={1} max={3650} step={1} aria-describedby={`${id}-days`} /></label>
        <p id={`${id}-days`} class="hint muted">{t("Leave empty for a key that does not expire.")}</p>
        <label class="check"><input type="checkbox" checked={limit.value} onChange={(e) => (limit.value = (e.currentTarget as HTMLInputElement).checked)} /> {t("Limit the key to some of my rights")}</label>
        {limit.value && <PermissionEditor id={`${id}-perms`} value={chosen.value} onChange={(v) => (chosen.value = v)} readOnly={false} />}
        <label>{t("Your password")}<input name="password" type="password" autocomplete="current-password" required /></label>
        {formError.value && <p class="error" role="alert">{formError.value}</p>}
        <div><button type="submit" class="primary" disabled={busy.value}>{busy.value ? t("Creating…") : t("Create key")}</button></div>
      </form>
    </section>
  );
}

/**
 * One record: new, edit, or read-only view (`?view=1`). The form state is the record's values and
 * is sent as the JSON body of POST/PUT; required fields are checked before sending, the server's
 * 422 errors are shown at their fields, and unsaved changes warn before leaving. An existing record
 * is watched while open (someone else's save or delete is told at once), and saved with the ETag it
 * was loaded with (If-Match): a save over someone else's newer version asks first.
 */
import { useEffect, useLayoutEffect, useRef } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { api, ApiError, query, type Envelope } from "../api";
import { navigate, setLeaveGuard } from "../router";
import { me, type FieldView, type ResourceView } from "../state";
import { FieldEditor } from "../fields";
import { PermissionEditor } from "../components/PermissionEditor";
import { ErrorSummary, focusField, inFormOrder } from "../components/ErrorSummary";
import { Dialog } from "../components/Dialog";
import { live, type Change } from "../live";
import { personName } from "../people";
import { t } from "../i18n";

type Values = Record<string, unknown>;
type One = Envelope & Record<string, Record<string, Values>>;
/** Someone else changed or deleted the record while it was open. */
type Stale = { deleted: boolean; who: string };
/** A save refused because the record changed since it was loaded: its version now. */
type Conflict = { who: string; etag: string | null };

/** The same values, whatever order their keys come in. */
const sameRecord = (a: Values, b: Values) => {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => JSON.stringify(a[k]) === JSON.stringify(b[k]));
};

function isEmpty(f: FieldView, v: unknown): boolean {
  if (v === null || v === undefined || v === "") return true;
  if (Array.isArray(v)) return v.length === 0;
  if (f.i18n && typeof v === "object") return Object.values(v as Values).every((x) => x === null || x === undefined || x === "");
  return false;
}

const LEAVE = () => t("This form has unsaved changes. Leave without saving?");
/** Inputs where Enter means the control's own action, never "submit the form". */
const IMPLICIT_OK = new Set(["submit", "button", "reset", "image"]);

export function RecordPage({ def, uuid, readOnly }: { def: ResourceView; uuid: string | null; readOnly: boolean }) {
  const values = useSignal<Values | null>(null);
  const saved = useRef("");
  const errors = useSignal<Record<string, string>>({});
  const message = useSignal("");
  const saving = useSignal(false);
  const importing = useSignal(false);
  /** The version the form was loaded with (or last saved as), sent as If-Match. */
  const etag = useRef<string | null>(null);
  /** The record as loaded or last saved (what "changed by someone else" is measured against). */
  const loaded = useRef<Values | null>(null);
  const stale = useSignal<Stale | null>(null);
  const conflict = useSignal<Conflict | null>(null);
  const saveButton = useRef<HTMLButtonElement>(null);
  const ro = readOnly || (uuid ? !def.can.edit : !def.can.create);
  const dirty = () => values.value !== null && JSON.stringify(values.value) !== saved.current;

  const path = `/${def.name}/${uuid}`;
  const fetchRecord = async () => {
    const r = await api<One>("GET", path);
    return { record: r.body[def.name][uuid!], etag: r.headers.get("etag") };
  };
  const show = (record: Values, tag: string | null) => {
    values.value = record;
    saved.current = JSON.stringify(record);
    loaded.current = record;
    etag.current = tag;
  };
  const reload = async () => {
    try {
      const r = await fetchRecord();
      show(r.record, r.etag);
      stale.value = null;
      errors.value = {};
      message.value = "";
    } catch (e) {
      message.value = (e as Error).message;
    }
  };

  useEffect(() => {
    if (!uuid) {
      api<Envelope & { record: Values }>("GET", `/empty-resource${query({ resource: def.name })}`)
        .then((r) => { values.value = r.body.record; saved.current = JSON.stringify(r.body.record); })
        .catch((e: Error) => (message.value = e.message));
      return;
    }
    let gone = false;
    /** A change told before the record was loaded: whether the load already holds it is known after. */
    let early = false;
    /** Someone else's change is told (a read-only view just shows the new version). */
    const tell = async (deleted: boolean, by: string | null) => {
      const who = await personName(by);
      if (gone) return;
      if (ro && !deleted) await reload();
      stale.value = { deleted, who };
    };
    const changed = (c: Change) => {
      if (c.uuid !== uuid || (c._modified_by !== null && c._modified_by === me.value?.uuid)) return;
      if (!loaded.current) return void (early = true);
      if (c.action !== "delete" && loaded.current && sameRecord(c.record, loaded.current)) return;
      void tell(c.action === "delete", c._modified_by);
    };
    /** Many changes, or a break in the stream: the record as it is now says whether it changed. */
    const check = async () => {
      if (!loaded.current) return;
      try {
        const now = await fetchRecord();
        if (gone || (now.etag !== null && now.etag === etag.current) || sameRecord(now.record, loaded.current)) return;
        const by = typeof now.record._modified_by === "string" ? now.record._modified_by : null;
        if (by === null || by !== me.value?.uuid) void tell(false, by);
      } catch (e) {
        if (!gone && e instanceof ApiError && e.status === 404) void tell(true, null);
      }
    };
    const stream = live([`${def.name}/${uuid}`], { change: changed, stale: () => void check() });
    // Loaded once the stream is open: a change after the load is told, none falls between.
    void stream.ready.then(fetchRecord).then((r) => { if (gone) return; show(r.record, r.etag); if (early) void check(); }).catch((e: Error) => { if (!gone) message.value = e.message; });
    return () => { gone = true; stream.close(); };
  }, [def.name, uuid]);

  useEffect(() => {
    if (ro) return;
    const onUnload = (e: BeforeUnloadEvent) => { if (dirty()) e.preventDefault(); };
    window.addEventListener("beforeunload", onUnload);
    setLeaveGuard(() => !dirty() || window.confirm(LEAVE()));
    return () => { window.removeEventListener("beforeunload", onUnload); setLeaveGuard(null); };
  }, [ro]);

  /**
   * After the errors have rendered, the first invalid field in form order is focused and shown: in
   * the layout effect of that render, so the summary never shows without the focus (a timer ran
   * late on a loaded machine and left the Save button focused).
   */
  const focusFirstError = useRef(false);
  const showFirstError = () => { focusFirstError.current = true; };
  useLayoutEffect(() => {
    if (!focusFirstError.current) return;
    focusFirstError.current = false;
    const first = inFormOrder(Object.keys(errors.value).filter(Boolean))[0];
    if (first) focusField(first);
  });

  const save = async (e: Event) => {
    e.preventDefault();
    await send(etag.current);
  };

  /** Checks and sends the form; `ifMatch`: the version it may replace (null: whatever is stored). */
  const send = async (ifMatch: string | null) => {
    const v = values.value;
    if (!v) return;
    const missing: Record<string, string> = {};
    for (const [k, f] of Object.entries(def.fields)) if (f.required && !(f.type === "password" && uuid) && isEmpty(f, v[k])) missing[k] = "required";
    errors.value = missing;
    if (Object.keys(missing).length) {
      message.value = t("Fill in the required fields.");
      showFirstError();
      return;
    }
    saving.value = true;
    message.value = "";
    const body: Values = {};
    for (const k of Object.keys(def.fields)) {
      if (def.fields[k].type === "password" && (v[k] === "" || v[k] === undefined)) continue;
      if (v[k] !== undefined) body[k] = v[k];
    }
    try {
      if (uuid) {
        const r = await api<One>("PUT", path, body, ifMatch ? { "if-match": ifMatch } : {});
        show(r.body[def.name][uuid], r.headers.get("etag"));
        stale.value = null;
        message.value = t("Saved.");
      } else {
        const r = await api<Envelope & Record<string, Record<string, Values>>>("POST", `/${def.name}`, body);
        saved.current = JSON.stringify(values.value);
        navigate(`/admin/${def.name}/${Object.keys(r.body[def.name])[0]}`, true);
      }
    } catch (err) {
      const a = err as ApiError;
      if (uuid && a.status === 412) {
        await askOverwrite(a);
        return;
      }
      errors.value = a.body?.errors ?? {};
      message.value = a.message;
      showFirstError();
    } finally {
      saving.value = false;
    }
  };

  /**
   * The save met a newer version: who made it, and its ETag for "Overwrite" (the 412 names both;
   * else the record is read again).
   */
  const askOverwrite = async (refused: ApiError) => {
    const by = (b: unknown) => (typeof b === "string" ? b : null);
    try {
      const tag = refused.headers.get("etag");
      const now = tag && "_modified_by" in refused.body ? { etag: tag, by: by(refused.body._modified_by) } : await fetchRecord().then((r) => ({ etag: r.etag, by: by(r.record._modified_by) }));
      conflict.value = { who: await personName(now.by), etag: now.etag };
    } catch (e) {
      message.value = e instanceof ApiError && e.status === 404 ? t("This record was deleted by someone else.") : (e as Error).message;
    }
  };
  const resolve = (choice: "overwrite" | "reload" | "cancel") => {
    const c = conflict.value;
    conflict.value = null;
    if (!c) return;
    // The dialog leaves the page: the focus goes back to where saving began.
    setTimeout(() => saveButton.current?.focus(), 0);
    if (choice === "overwrite") void send(c.etag);
    else if (choice === "reload") void reload();
    else message.value = t("Not saved: your changes are still in the form.");
  };
  const reloadAsked = () => {
    if (!dirty() || window.confirm(t("Load the new version? Your unsaved changes will be lost."))) void reload();
  };

  /**
   * Saving is an explicit action: Enter in a one-line field would submit the form (a half-typed
   * title became a record), so it is held back there; Ctrl+S or Cmd+S saves from anywhere in it.
   */
  const onKeyDown = (e: KeyboardEvent) => {
    if ((e.ctrlKey || e.metaKey) && !e.altKey && !e.shiftKey && e.key.toLowerCase() === "s") {
      e.preventDefault();
      if (!ro && !saving.value) void save(e);
      return;
    }
    if (e.key === "Enter" && e.target instanceof HTMLInputElement && !IMPLICIT_OK.has(e.target.type)) e.preventDefault();
  };

  const fromDocument = async (file: File | undefined) => {
    if (!file) return;
    importing.value = true;
    message.value = "";
    const form = new FormData();
    form.append("file", file);
    try {
      const r = await api<Envelope & { proposal: Values; rejected: Record<string, string>; missing: string[] }>("POST", `/${def.name}/import-document`, form);
      values.value = { ...values.value, ...r.body.proposal };
      errors.value = r.body.rejected ?? {};
      message.value = r.body.missing?.length ? t("Filled from {file}; still missing: {fields}.", { file: file.name, fields: r.body.missing.join(", ") }) : t("Filled from {file}.", { file: file.name });
    } catch (err) {
      message.value = (err as Error).message;
    } finally {
      importing.value = false;
    }
  };

  const v = values.value;
  // A location's longitude is edited with its latitude, not on its own.
  const companions = new Set(Object.values(def.fields).map((f) => f.longitude_field).filter(Boolean));
  const names = { name: def.label.singular.toLowerCase(), Name: def.label.singular };
  const title = uuid ? (ro ? def.label.singular : t("Edit {name}", names)) : t("New {name}", names);
  return (
    <main class="page record">
      <p><a href={`/admin/${def.name}`}>← {def.label.plural}</a></p>
      <h1>{title.charAt(0).toUpperCase() + title.slice(1)}</h1>
      {!uuid && !ro && def.ai && (
        <p class="from-docx"><label class="button">{importing.value ? t("Reading…") : t("Import from .docx")}
          <input type="file" class="sr-only" accept=".docx" disabled={importing.value} onChange={(e) => fromDocument((e.target as HTMLInputElement).files?.[0])} /></label></p>
      )}
      {uuid && (
        <div class="live-notice" role="status" aria-live="polite">
          {stale.value && (
            <div class={stale.value.deleted ? "notice error" : "notice"}>
              <p>{stale.value.deleted ? t("Deleted by {who} a moment ago.", { who: stale.value.who }) : t("Changed by {who} a moment ago.", { who: stale.value.who })}</p>
              {!ro && !stale.value.deleted && <button type="button" onClick={reloadAsked}>{t("Reload")}</button>}
              <button type="button" onClick={() => (stale.value = null)}>{ro || stale.value.deleted ? t("Dismiss") : t("Keep editing")}</button>
            </div>
          )}
        </div>
      )}
      {!v && !message.value && <p role="status">{t("Loading…")}</p>}
      {v && (
        <form onSubmit={save} onKeyDown={onKeyDown} class="fields" noValidate>
          <ErrorSummary fields={def.fields} errors={errors.value} />
          {Object.entries(def.fields).filter(([name]) => !companions.has(name)).map(([name, f]) => {
            const id = `field-${name}`;
            const set = (x: unknown) => (values.value = { ...values.value, [name]: x });
            const setField = (n: string, x: unknown) => (values.value = { ...values.value, [n]: x });
            return (
              <div key={name} class={`field type-${f.type} ${f.wrapper_class ?? ""}`} data-field={name}>
                <label for={id}>{f.label}{f.required && <span aria-hidden="true"> *</span>}</label>
                {def.name === "roles" && name === "permissions"
                  ? <PermissionEditor id={id} value={v[name]} onChange={set} readOnly={ro} />
                  : <FieldEditor id={id} name={name} field={f} value={v[name]} onChange={set} readOnly={ro} languages={def.languages} error={errors.value[name]}
                      def={def} model={v} setField={setField} uuid={uuid} path={name} errors={errors.value} />}
                {errors.value[name] && <p class="error field-error" role="alert">{errors.value[name]}</p>}
              </div>
            );
          })}
          {message.value && <p class={Object.keys(errors.value).length || message.value !== t("Saved.") ? "error" : "ok"} role="status">{message.value}</p>}
          {!ro && <button type="submit" ref={saveButton} class="primary" disabled={saving.value}>{saving.value ? t("Saving…") : t("Save")}</button>}
          {ro && uuid && def.can.edit && <a class="button" href={`/admin/${def.name}/${uuid}`}>{t("Edit")}</a>}
        </form>
      )}
      {!v && message.value && <p class="error" role="alert">{message.value}</p>}
      {conflict.value && (
        <Dialog title={t("Save over a newer version?")} onClose={() => resolve("cancel")}>
          <div class="conflict">
            <p>{t("This record was changed by {who} since you opened it.", { who: conflict.value.who })}</p>
            <p>{t("Overwrite saves your version over theirs; Reload shows theirs and drops your changes.")}</p>
            <p class="actions">
              <button type="button" class="danger" onClick={() => resolve("overwrite")}>{t("Overwrite")}</button>
              <button type="button" onClick={() => resolve("reload")}>{t("Reload")}</button>
              <button type="button" onClick={() => resolve("cancel")}>{t("Cancel")}</button>
            </p>
          </div>
        </Dialog>
      )}
    </main>
  );
}

/**
 * One record: new, edit, or read-only view (`?view=1`). The form state is the record's values and
 * is sent as the JSON body of POST/PUT; required fields are checked before sending, the server's
 * 422 errors are shown at their fields, and unsaved changes warn before leaving.
 */
import { useEffect, useRef } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { api, ApiError, query, type Envelope } from "../api";
import { navigate, setLeaveGuard } from "../router";
import type { FieldView, ResourceView } from "../state";
import { FieldEditor } from "../fields";
import { PermissionEditor } from "../components/PermissionEditor";
import { ErrorSummary, focusField, inFormOrder } from "../components/ErrorSummary";
import { t } from "../i18n";

type Values = Record<string, unknown>;

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
  const ro = readOnly || (uuid ? !def.can.edit : !def.can.create);
  const dirty = () => values.value !== null && JSON.stringify(values.value) !== saved.current;

  useEffect(() => {
    const load = uuid
      ? api<Envelope & Record<string, Record<string, Values>>>("GET", `/${def.name}/${uuid}`).then((r) => r.body[def.name][uuid])
      : api<Envelope & { record: Values }>("GET", `/empty-resource${query({ resource: def.name })}`).then((r) => r.body.record);
    load.then((v) => { values.value = v; saved.current = JSON.stringify(v); }).catch((e: Error) => (message.value = e.message));
  }, [def.name, uuid]);

  useEffect(() => {
    if (ro) return;
    const onUnload = (e: BeforeUnloadEvent) => { if (dirty()) e.preventDefault(); };
    window.addEventListener("beforeunload", onUnload);
    setLeaveGuard(() => !dirty() || window.confirm(LEAVE()));
    return () => { window.removeEventListener("beforeunload", onUnload); setLeaveGuard(null); };
  }, [ro]);

  /** After the errors have rendered, the first invalid field in form order is focused and shown. */
  const showFirstError = () => setTimeout(() => {
    const first = inFormOrder(Object.keys(errors.value).filter(Boolean))[0];
    if (first) focusField(first);
  }, 0);

  const save = async (e: Event) => {
    e.preventDefault();
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
        const r = await api<Envelope & Record<string, Record<string, Values>>>("PUT", `/${def.name}/${uuid}`, body);
        const stored = r.body[def.name][uuid];
        values.value = stored;
        saved.current = JSON.stringify(stored);
        message.value = t("Saved.");
      } else {
        const r = await api<Envelope & Record<string, Record<string, Values>>>("POST", `/${def.name}`, body);
        saved.current = JSON.stringify(values.value);
        navigate(`/admin/${def.name}/${Object.keys(r.body[def.name])[0]}`, true);
      }
    } catch (err) {
      const a = err as ApiError;
      errors.value = a.body?.errors ?? {};
      message.value = a.message;
      showFirstError();
    } finally {
      saving.value = false;
    }
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
          {!ro && <button type="submit" class="primary" disabled={saving.value}>{saving.value ? t("Saving…") : t("Save")}</button>}
          {ro && uuid && def.can.edit && <a class="button" href={`/admin/${def.name}/${uuid}`}>{t("Edit")}</a>}
        </form>
      )}
      {!v && message.value && <p class="error" role="alert">{message.value}</p>}
    </main>
  );
}

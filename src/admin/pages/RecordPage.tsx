/** One record: new, edit, or read-only view (`?view=1`). Field editors come from ../fields. */
import { useEffect } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { api, ApiError, query, type Envelope } from "../api";
import { navigate } from "../router";
import type { ResourceView } from "../state";
import { FieldEditor } from "../fields";
import { PermissionEditor } from "../components/PermissionEditor";

type Values = Record<string, unknown>;

export function RecordPage({ def, uuid, readOnly }: { def: ResourceView; uuid: string | null; readOnly: boolean }) {
  const values = useSignal<Values | null>(null);
  const errors = useSignal<Record<string, string>>({});
  const message = useSignal("");
  const saving = useSignal(false);
  const ro = readOnly || (uuid ? !def.can.edit : !def.can.create);

  useEffect(() => {
    const load = uuid
      ? api<Envelope & Record<string, Record<string, Values>>>("GET", `/${def.name}/${uuid}`).then((r) => r.body[def.name][uuid])
      : api<Envelope & { record: Values }>("GET", `/empty-resource${query({ resource: def.name })}`).then((r) => r.body.record);
    load.then((v) => (values.value = v)).catch((e: Error) => (message.value = e.message));
  }, [def.name, uuid]);

  const save = async (e: Event) => {
    e.preventDefault();
    if (!values.value) return;
    saving.value = true;
    errors.value = {};
    message.value = "";
    const body: Values = {};
    for (const k of Object.keys(def.fields)) {
      const v = values.value[k];
      if (def.fields[k].type === "password" && (v === "" || v === undefined)) continue;
      if (v !== undefined) body[k] = v;
    }
    try {
      if (uuid) {
        await api("PUT", `/${def.name}/${uuid}`, body);
        message.value = "Saved.";
      } else {
        const r = await api<Envelope & Record<string, Record<string, Values>>>("POST", `/${def.name}`, body);
        const created = Object.keys(r.body[def.name])[0];
        navigate(`/admin/${def.name}/${created}`, true);
      }
    } catch (err) {
      const a = err as ApiError;
      errors.value = a.body?.errors ?? {};
      message.value = a.message;
    } finally {
      saving.value = false;
    }
  };

  const v = values.value;
  const title = uuid ? `${ro ? "" : "Edit "}${def.label.singular.toLowerCase()}` : `New ${def.label.singular.toLowerCase()}`;
  return (
    <main class="page record">
      <p><a href={`/admin/${def.name}`}>← {def.label.plural}</a></p>
      <h1>{title.charAt(0).toUpperCase() + title.slice(1)}</h1>
      {!v && !message.value && <p role="status">Loading…</p>}
      {v && (
        <form onSubmit={save} class="fields">
          {Object.entries(def.fields).map(([name, f]) => {
            const id = `field-${name}`;
            const set = (x: unknown) => (values.value = { ...values.value, [name]: x });
            return (
              <div key={name} class={`field type-${f.type} ${f.wrapper_class ?? ""}`} data-field={name}>
                <label for={id}>{f.label}{f.required && <span aria-hidden="true"> *</span>}</label>
                {def.name === "roles" && name === "permissions"
                  ? <PermissionEditor id={id} value={v[name]} onChange={set} readOnly={ro} />
                  : <FieldEditor id={id} name={name} field={f} value={v[name]} onChange={set} readOnly={ro} languages={def.languages} error={errors.value[name]} />}
                {errors.value[name] && <p class="error" role="alert">{errors.value[name]}</p>}
              </div>
            );
          })}
          {message.value && <p class={Object.keys(errors.value).length || message.value !== "Saved." ? "error" : "ok"} role="status">{message.value}</p>}
          {!ro && <button type="submit" class="primary" disabled={saving.value}>{saving.value ? "Saving…" : "Save"}</button>}
          {ro && uuid && def.can.edit && <a class="button" href={`/admin/${def.name}/${uuid}`}>Edit</a>}
        </form>
      )}
      {!v && message.value && <p class="error" role="alert">{message.value}</p>}
    </main>
  );
}

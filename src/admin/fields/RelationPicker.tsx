/**
 * A `select` naming another resource: a combobox that searches that resource through the list API
 * as you type (`search=`, a bounded page), shows each record by its title, and offers "Create new …"
 * in a drawer holding the other resource's form. A `multi` one shows the chosen records as chips.
 * The value kept is what the server's own options use: the record's `name` when it has one, else
 * its uuid (and the uuid wherever `.resources` gave the uuid, as for `reference: "uuid"`).
 */
import type { FunctionComponent } from "preact";
import { useEffect, useRef } from "preact/hooks";
import { useSignal } from "@preact/signals";
import type { FieldProps } from "./types";
import { api, ApiError, query, type Envelope } from "../api";
import { resources, type FieldView, type ResourceView } from "../state";
import { Chips, Combobox, type ComboOption } from "../components/Combobox";
import { Drawer, closeDrawerOf } from "../components/Drawer";
import { Icon } from "../components/Icon";
import { t, tn } from "../i18n";

type Rec = Record<string, unknown> & { uuid: string };
type Values = Record<string, unknown>;
/** The form editor of any field, for the drawer's form (FieldEditor, handed down by fields/index.tsx). */
export type EditorComponent = FunctionComponent<FieldProps & { languages: string[] }>;

/** Records shown at once; typing narrows the search. */
const PAGE = 20;
const DEBOUNCE_MS = 200;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const CREATE = "\u0000create";

/** A record's title, by the rule the server names records in options: name, title, label, e-mail, else the first text. */
export function titleOf(def: ResourceView, rec: Values): string {
  for (const key of ["name", "title", "label", "email", ...Object.keys(def.fields)]) {
    if (def.fields[key]?.write_only) continue;
    const v = rec[key];
    if (typeof v === "string" && v) return v;
    if (v && typeof v === "object" && !Array.isArray(v)) {
      const first = Object.values(v).find((x) => typeof x === "string" && x);
      if (first) return first as string;
    }
  }
  return String(rec.uuid ?? "");
}

/** The field the drawer fills with what was typed: the one a title is read from. */
function titleField(def: ResourceView): string | undefined {
  const texts = Object.entries(def.fields).filter(([, f]) => !f.write_only && ["text", "textarea", "email"].includes(f.type) && !f.multi);
  return ["name", "title", "label", "email"].find((k) => texts.some(([n]) => n === k)) ?? texts[0]?.[0];
}

const valueOf = (field: FieldView, rec: Rec): string =>
  field.options?.some((o) => o.value === rec.uuid) ? rec.uuid : typeof rec.name === "string" && rec.name ? rec.name : rec.uuid;

export function RelationPicker(p: FieldProps & { Editor?: EditorComponent }) {
  const { id, field, value, onChange, readOnly, error } = p;
  /** Set when no `<label for>` names the editor (a language of a translated field). */
  const name = (p as { label?: string }).label;
  const res = field.resource!;
  const other = resources.value[res];
  const singular = other.label.singular.toLowerCase();
  const plural = other.label.plural.toLowerCase();
  /** The other resource's names for the messages, lowercased where English writes them so. */
  const names = { singular, plural, Singular: other.label.singular, Plural: other.label.plural };
  const chosen = field.multi ? (Array.isArray(value) ? value.map(String).filter(Boolean) : []) : value === null || value === undefined || value === "" ? [] : [String(value)];

  const text = useSignal("");
  /** Typed since the last pick (single: the text box shows the chosen title otherwise). */
  const editing = useSignal(false);
  const open = useSignal(false);
  const found = useSignal<Rec[]>([]);
  const total = useSignal(0);
  const problem = useSignal("");
  /** A search is under way and nothing has been found yet for the open list. */
  const pending = useSignal(false);
  const drawer = useSignal<{ prefill: string } | null>(null);
  const labelTick = useSignal(0);
  const labels = useRef<Map<string, string> | null>(null);
  if (!labels.current) labels.current = new Map((field.options ?? []).map((o) => [o.value, o.label]));
  const input = useRef<HTMLInputElement>(null);
  const seq = useRef(0);

  // Titles of the chosen records the server's options left out (it names at most 500): named
  // records are kept by their name, which is their title; uuids are read in one list request.
  const chosenKey = chosen.join("\n");
  useEffect(() => {
    const missing = chosen.filter((v) => !labels.current!.has(v));
    for (const v of missing) if (!UUID.test(v)) labels.current!.set(v, v);
    const ids = missing.filter((v) => UUID.test(v));
    // A filter takes at most 100 alternatives.
    for (let i = 0; i < ids.length; i += 100) {
      const some = ids.slice(i, i + 100);
      api<Envelope & Record<string, Record<string, Rec>>>("GET", `/${res}${query({ filter: `uuid:${some.join("||")}`, limit: some.length })}`)
        .then((r) => {
          for (const rec of Object.values(r.body[res] ?? {})) labels.current!.set(rec.uuid, titleOf(other, rec));
          labelTick.value++;
        })
        .catch(() => {});
    }
  }, [chosenKey]);

  const term = editing.value ? text.value.trim() : "";
  useEffect(() => {
    if (!open.value) return;
    const mine = ++seq.current;
    pending.value = true;
    const timer = setTimeout(async () => {
      try {
        const r = await api<Envelope & Record<string, Record<string, Rec>>>("GET", `/${res}${query({ search: term, limit: PAGE })}`);
        if (mine !== seq.current) return;
        found.value = Object.values(r.body[res] ?? {});
        total.value = typeof r.body.total === "number" ? r.body.total : found.value.length;
        problem.value = "";
      } catch (e) {
        if (mine !== seq.current) return;
        found.value = [];
        problem.value = t("Could not search the {plural}: {why}", { plural, Plural: other.label.plural, why: (e as Error).message });
      }
      pending.value = false;
    }, term ? DEBOUNCE_MS : 0);
    return () => clearTimeout(timer);
  }, [open.value, term]);

  void labelTick.value; // re-render when titles arrive
  const labelOf = (v: string) => labels.current!.get(v) ?? v;

  if (readOnly) {
    if (field.multi) return <div id={id} class="picker multi read-only"><Chips items={chosen.map((v) => ({ key: v, label: labelOf(v) }))} label={name ?? field.label} />{!chosen.length && <span class="muted">—</span>}</div>;
    return <input id={id} type="text" readOnly aria-label={name} value={chosen.length ? labelOf(chosen[0]) : ""} />;
  }

  const records = found.value.filter((r) => !field.multi || !chosen.includes(valueOf(field, r)));
  const options: ComboOption[] = records.map((r) => ({ key: r.uuid, label: titleOf(other, r) }));
  const typed = text.value.trim();
  const mayCreate = other.can.create && Boolean(p.Editor);
  if (mayCreate) options.push({ key: CREATE, label: typed ? t("Create new {singular} “{text}”", { ...names, text: typed }) : t("Create new {singular}…", names), create: true });
  const shown = records.length;
  const status = pending.value && !shown ? t("Searching…") : problem.value
    || (!shown ? (term ? t("No {singular} matches “{text}”.", { ...names, text: term }) : t("No {plural} yet.", names)) : total.value > found.value.length ? t("{n} of {total} {plural}; type to narrow.", { ...names, n: shown, total: total.value }) : tn(shown, "{n} {singular}.", "{n} {plural}.", names))
    + (mayCreate ? ` ${t("Or create a new {singular}.", names)}` : "");
  const note = problem.value || (shown && total.value > found.value.length ? t("Showing {n} of {total}: type to narrow", { n: found.value.length, total: total.value })
    : !shown && !pending.value ? (term ? t("No {singular} matches.", names) : t("No {plural} yet.", names)) : undefined);

  const pickRecord = (rec: Rec) => {
    const v = valueOf(field, rec);
    labels.current!.set(v, titleOf(other, rec));
    if (field.multi) {
      if (!chosen.includes(v)) onChange([...chosen, v]);
      text.value = "";
    } else {
      onChange(v);
      editing.value = false;
    }
    // Closed after a pick, so the list never covers what comes next; typing or an arrow opens it.
    open.value = false;
  };
  const pick = (o: ComboOption) => {
    if (o.key === CREATE) {
      drawer.value = { prefill: typed };
      open.value = false;
      return;
    }
    const rec = found.value.find((r) => r.uuid === o.key);
    if (rec) pickRecord(rec);
  };
  const clear = () => {
    onChange("");
    editing.value = false;
    text.value = "";
    input.current?.focus();
  };
  const onBlur = () => {
    // Leaving for the drawer keeps what was typed; otherwise a single picker shows its record again.
    if (field.multi || drawer.value) return;
    if (editing.value && text.value.trim() === "" && !field.required) onChange("");
    editing.value = false;
  };

  const combo = (
    <Combobox id={id} label={t("{name} options", { name: name ?? field.label })} ariaLabel={name} text={field.multi || editing.value ? text.value : chosen.length ? labelOf(chosen[0]) : ""}
      options={options} open={open.value} inputRef={input} status={status} note={note} required={field.required} invalid={Boolean(error)}
      placeholder={t("Search {plural}…", names)} selectOnFocus={!field.multi}
      onText={(t) => { text.value = t; editing.value = true; }} onOpen={(o) => (open.value = o)} onPick={pick} onBlur={onBlur}
      onBackspaceEmpty={field.multi ? () => { if (chosen.length) onChange(chosen.slice(0, -1)); } : undefined} />
  );
  return (
    <div class={`picker relation ${field.multi ? "multi" : "single"}`} data-resource={res} onClick={(e) => { if (e.target === e.currentTarget) input.current?.focus(); }}>
      {field.multi && <Chips items={chosen.map((v) => ({ key: v, label: labelOf(v) }))} label={`${name ?? field.label}: chosen`}
        onRemove={(v) => { onChange(chosen.filter((x) => x !== v)); input.current?.focus(); }} />}
      {combo}
      {!field.multi && !field.required && chosen.length > 0 && (
        <button type="button" class="picker-clear" aria-label={t("Clear {name}", { name: name ?? field.label })} onClick={clear}><Icon name="close" size={16} /></button>
      )}
      {drawer.value && p.Editor && (
        <CreateDrawer other={other} idBase={`${id}-new`} prefill={drawer.value.prefill} Editor={p.Editor}
          onCreated={pickRecord}
          onClose={() => { drawer.value = null; requestAnimationFrame(() => input.current?.focus()); }} />
      )}
    </div>
  );
}

const isEmpty = (f: FieldView, v: unknown) =>
  v === null || v === undefined || v === "" || (Array.isArray(v) && !v.length)
  || (f.i18n && typeof v === "object" && !Array.isArray(v) && Object.values(v as Values).every((x) => x === null || x === undefined || x === ""));

/** The other resource's form in a drawer; a created record is handed back and the drawer closes. */
function CreateDrawer({ other, idBase, prefill, Editor, onCreated, onClose }: {
  other: ResourceView; idBase: string; prefill: string; Editor: EditorComponent; onCreated: (rec: Rec) => void; onClose: () => void;
}) {
  const values = useSignal<Values | null>(null);
  const errors = useSignal<Record<string, string>>({});
  const message = useSignal("");
  const saving = useSignal(false);
  const form = useRef<HTMLFormElement>(null);
  const singular = other.label.singular.toLowerCase();

  useEffect(() => {
    api<Envelope & { record: Values }>("GET", `/empty-resource${query({ resource: other.name })}`)
      .then((r) => {
        const v = { ...r.body.record };
        const key = titleField(other);
        if (key && prefill) {
          const f = other.fields[key];
          v[key] = f.i18n && other.languages.length ? { ...(v[key] as Values), [other.languages[0]]: prefill } : prefill;
        }
        values.value = v;
      })
      .catch((e: Error) => (message.value = e.message));
  }, []);
  const ready = values.value !== null;
  useEffect(() => {
    if (ready) form.current?.querySelector<HTMLElement>("input:not([type=hidden]), textarea, select, [contenteditable=true]")?.focus();
  }, [ready]);

  const submit = async (e: Event) => {
    e.preventDefault();
    e.stopPropagation();
    const v = values.value;
    if (!v || saving.value) return;
    const missing: Record<string, string> = {};
    for (const [k, f] of Object.entries(other.fields)) if (f.required && isEmpty(f, v[k])) missing[k] = "required";
    errors.value = missing;
    if (Object.keys(missing).length) {
      message.value = t("Fill in the required fields.");
      document.getElementById(`${idBase}-${Object.keys(missing)[0]}`)?.focus();
      return;
    }
    saving.value = true;
    message.value = "";
    const body: Values = {};
    for (const k of Object.keys(other.fields)) if (v[k] !== undefined && !(other.fields[k].type === "password" && v[k] === "")) body[k] = v[k];
    try {
      const r = await api<Envelope & Record<string, Record<string, Rec>>>("POST", `/${other.name}`, body);
      const [uuid, rec] = Object.entries(r.body[other.name])[0];
      onCreated({ ...rec, uuid });
      closeDrawerOf(form.current);
    } catch (err) {
      const a = err as ApiError;
      errors.value = a.body?.errors ?? {};
      message.value = a.message;
    } finally {
      saving.value = false;
    }
  };
  const onKeyDown = (e: KeyboardEvent) => {
    if ((e.ctrlKey || e.metaKey) && !e.altKey && !e.shiftKey && e.key.toLowerCase() === "s") return void submit(e);
    if (e.key === "Enter" && e.target instanceof HTMLInputElement && !["submit", "button", "reset", "image"].includes(e.target.type)) e.preventDefault();
  };

  const v = values.value;
  const companions = new Set(Object.values(other.fields).map((f) => f.longitude_field).filter(Boolean));
  return (
    <Drawer title={t("New {name}", { name: singular, Name: other.label.singular })} onClose={onClose}>
      {!v && !message.value && <p role="status">{t("Loading…")}</p>}
      {v && (
        <form ref={form} class="fields" noValidate onSubmit={submit} onKeyDown={onKeyDown}>
          {Object.entries(other.fields).filter(([name]) => !companions.has(name)).map(([name, f]) => {
            const fid = `${idBase}-${name}`;
            const setField = (n: string, x: unknown) => (values.value = { ...values.value, [n]: x });
            return (
              <div key={name} class={`field type-${f.type} ${f.wrapper_class ?? ""}`} data-field={name}>
                <label for={fid}>{f.label}{f.required && <span aria-hidden="true"> *</span>}</label>
                <Editor id={fid} name={name} field={f} value={v[name]} onChange={(x) => setField(name, x)} readOnly={false} languages={other.languages}
                  error={errors.value[name]} def={other} model={v} setField={setField} uuid={null} path={name} errors={errors.value} />
                {errors.value[name] && <p class="error field-error" role="alert">{errors.value[name]}</p>}
              </div>
            );
          })}
          {message.value && <p class="error" role="alert">{message.value}</p>}
          <div class="drawer-actions">
            <button type="submit" class="primary" disabled={saving.value}>{saving.value ? t("Creating…") : t("Create {singular}", { singular, Singular: other.label.singular })}</button>
            <button type="button" onClick={(e) => closeDrawerOf(e.currentTarget as Element)}>{t("Cancel")}</button>
          </div>
        </form>
      )}
      {!v && message.value && <p class="error" role="alert">{message.value}</p>}
    </Drawer>
  );
}

/**
 * Actions on the selected rows: delete, export, or set one field for all in one atomic bulk PUT.
 * Setting a field is spelled out before it happens (a value, or "clear" chosen on purpose, and a
 * confirmation naming the count), because a trial's "—" once overwrote a whole selection; the last
 * change can be undone while its rows are still the ones shown.
 */
import { useSignal } from "@preact/signals";
import { api, ApiError, type Envelope } from "../api";
import type { FieldView, ResourceView } from "../state";
import type { Row } from "../rows";
import { display } from "./Cell";
import { t } from "../i18n";

/** The value choice that means "remove the value", distinct from every option a select can have. */
const CLEAR = "\u0000clear";
const SETTABLE = new Set(["text", "select", "boolean", "number", "date", "email", "url", "color", "textarea"]);

type Undo = { label: string; field: string; set: unknown; before: Record<string, unknown> };

function parse(f: FieldView, raw: string): unknown {
  if (raw === CLEAR) return null;
  if (f.type === "boolean") return raw === "1";
  if (f.type === "number") return Number(raw);
  return raw;
}

export function BulkBar({ def, rows, uuids, onDone }: { def: ResourceView; rows: Row[]; uuids: string[]; onDone: () => Promise<void> | void }) {
  const field = useSignal("");
  const value = useSignal("");
  const errors = useSignal<Record<string, string>>({});
  const message = useSignal("");
  const undo = useSignal<Undo | null>(null);
  const busy = useSignal(false);
  const settable = Object.entries(def.fields).filter(([, f]) => !f.write_only && !f.multi && !f.i18n && SETTABLE.has(f.type));
  const chosen = def.fields[field.value];
  /** The count with the resource's own word for it, lowercased where English writes it so. */
  const counted = (n: number) => ({ n, noun: (n === 1 ? def.label.singular : def.label.plural).toLowerCase(), Noun: n === 1 ? def.label.singular : def.label.plural });
  const invalidNumber = chosen?.type === "number" && value.value !== CLEAR && value.value.trim() !== "" && !Number.isFinite(Number(value.value));
  // A value is something to set: blank or spaces are not (clearing is chosen on purpose).
  const ready = Boolean(chosen) && value.value.trim() !== "" && !invalidNumber && !busy.value;

  const removeAll = async () => {
    if (!confirm(t("Delete {n} {noun}? They can be restored for 90 days.", counted(uuids.length)))) return;
    const failed: Record<string, string> = {};
    for (const uuid of uuids) await api("DELETE", `/${def.name}/${uuid}`).catch((e: ApiError) => (failed[uuid] = e.message));
    errors.value = failed;
    await onDone();
  };
  const exportSelected = () => {
    const chosenRows = rows.filter((r) => uuids.includes(r.uuid));
    const blob = new Blob([JSON.stringify(chosenRows, null, 2)], { type: "application/json" });
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = `${def.name}-selection.json`;
    a.click();
    URL.revokeObjectURL(a.href);
  };
  const put = (changes: Record<string, Record<string, unknown>>) => api("PUT", `/${def.name}`, changes);

  const setField = async (e: Event) => {
    e.preventDefault();
    if (!chosen || !ready) return;
    const clearing = value.value === CLEAR;
    const v = parse(chosen, value.value);
    const shown = chosen.type === "select" || chosen.type === "boolean" ? display(chosen, v) : String(v);
    const vars = { ...counted(uuids.length), field: chosen.label, value: shown };
    if (!confirm(clearing ? t("Clear {field} on {n} {noun}?", vars) : t("Set {field} to {value} on {n} {noun}?", vars))) return;
    const before = Object.fromEntries(rows.filter((r) => uuids.includes(r.uuid)).map((r) => [r.uuid, r[field.value] ?? null]));
    busy.value = true;
    try {
      await put(Object.fromEntries(uuids.map((u) => [u, { [field.value]: v }])));
      errors.value = {};
      const done = clearing ? t("Cleared {field} on {n} {noun}.", vars) : t("Set {field} to {value} on {n} {noun}.", vars);
      undo.value = { label: done, field: field.value, set: v, before };
      message.value = done;
      field.value = "";
      value.value = "";
      await onDone();
    } catch (err) {
      errors.value = (err as ApiError).body?.errors ?? { "": (err as Error).message };
    } finally {
      busy.value = false;
    }
  };

  /**
   * Puts back the values the rows had, in one atomic PUT, but only where the field still holds the
   * value this change set: a record someone changed since keeps their change.
   */
  const undoLast = async () => {
    const u = undo.value;
    if (!u) return;
    busy.value = true;
    try {
      const uuidsBefore = Object.keys(u.before);
      const now = await Promise.all(uuidsBefore.map((uuid) => api<Envelope & Record<string, Record<string, Row>>>("GET", `/${def.name}/${uuid}`).then((r) => r.body[def.name]?.[uuid], () => undefined)));
      const current = Object.fromEntries(now.filter((r): r is Row => Boolean(r)).map((r) => [r.uuid, r]));
      const back = Object.fromEntries(Object.entries(u.before).filter(([uuid]) => current[uuid] && JSON.stringify(current[uuid][u.field] ?? null) === JSON.stringify(u.set)).map(([uuid, old]) => [uuid, { [u.field]: old }]));
      if (Object.keys(back).length) await put(back);
      const kept = Object.keys(u.before).length - Object.keys(back).length;
      const undone = counted(Object.keys(back).length);
      message.value = kept ? t("Undone on {n} {noun}; {kept} changed since were left as they are.", { ...undone, kept }) : t("Undone on {n} {noun}.", undone);
      undo.value = null;
      await onDone();
    } catch (err) {
      errors.value = (err as ApiError).body?.errors ?? { "": (err as Error).message };
    } finally {
      busy.value = false;
    }
  };

  if (uuids.length === 0 && !message.value) return null;
  const options = chosen?.type === "boolean" ? [{ value: "1", label: t("Yes") }, { value: "0", label: t("No") }] : chosen?.options ?? [];
  return (
    <section class="bulk" aria-label={t("Bulk actions")}>
      {uuids.length > 0 && <strong>{t("{n} selected", { n: uuids.length })}</strong>}
      {uuids.length > 0 && def.can.delete && <button type="button" class="danger" onClick={removeAll}>{t("Delete selected")}</button>}
      {uuids.length > 0 && <button type="button" onClick={exportSelected}>{t("Export selected")}</button>}
      {uuids.length > 0 && def.can.edit && settable.length > 0 && (
        <form onSubmit={setField} class="inline">
          <label>{t("Set")} <select value={field.value} onChange={(e) => { field.value = (e.target as HTMLSelectElement).value; value.value = ""; }}>
            <option value="">{t("field…")}</option>
            {settable.map(([k, f]) => <option key={k} value={k}>{f.label}</option>)}
          </select></label>
          {chosen && (chosen.type === "select" || chosen.type === "boolean" ? (
            <label>{t("to")} <select value={value.value} onChange={(e) => (value.value = (e.target as HTMLSelectElement).value)}>
              <option value="" disabled>{t("choose…")}</option>
              {options.map((o) => <option key={o.value} value={o.value}>{o.label}</option>)}
              {!chosen.required && <option value={CLEAR}>{t("Clear (no value)")}</option>}
            </select></label>
          ) : (
            <>
              <label>{t("to")} <input value={value.value === CLEAR ? "" : value.value} disabled={value.value === CLEAR} aria-invalid={invalidNumber}
                onInput={(e) => { value.value = (e.target as HTMLInputElement).value; }} inputMode={chosen.type === "number" ? "decimal" : "text"} /></label>
              {!chosen.required && <label><input type="checkbox" checked={value.value === CLEAR} onChange={(e) => (value.value = (e.target as HTMLInputElement).checked ? CLEAR : "")} /> {t("clear it")}</label>}
            </>
          ))}
          <button type="submit" disabled={!ready}>{t("Apply to selected")}</button>
        </form>
      )}
      {message.value && <span role="status">{message.value}{undo.value && <> <button type="button" class="link" disabled={busy.value} onClick={undoLast}>{t("Undo")}</button></>}</span>}
      {Object.keys(errors.value).length > 0 && (
        <ul class="error" role="alert">{Object.entries(errors.value).map(([k, v]) => <li key={k}>{k ? `${k}: ` : ""}{v}</li>)}</ul>
      )}
    </section>
  );
}

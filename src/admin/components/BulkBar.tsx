/** Actions on the selected rows: delete, export, or set one field for all in one atomic bulk PUT. */
import { useSignal } from "@preact/signals";
import { api, ApiError } from "../api";
import type { ResourceView } from "../state";
import type { Row } from "../rows";

export function BulkBar({ def, rows, uuids, onDone }: { def: ResourceView; rows: Row[]; uuids: string[]; onDone: () => void }) {
  const field = useSignal("");
  const value = useSignal("");
  const errors = useSignal<Record<string, string>>({});
  const message = useSignal("");
  const settable = Object.entries(def.fields).filter(([, f]) => !f.write_only && !f.multi && !f.i18n && ["text", "select", "boolean", "number", "date", "email", "url", "color", "textarea"].includes(f.type));
  const chosen = def.fields[field.value];

  const removeAll = async () => {
    if (!confirm(`Delete ${uuids.length} records? They can be restored for 90 days.`)) return;
    const failed: Record<string, string> = {};
    for (const uuid of uuids) await api("DELETE", `/${def.name}/${uuid}`).catch((e: ApiError) => (failed[uuid] = e.message));
    errors.value = failed;
    if (!Object.keys(failed).length) onDone();
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
  const setField = async (e: Event) => {
    e.preventDefault();
    if (!chosen) return;
    const v = chosen.type === "boolean" ? value.value === "1" : chosen.type === "number" ? (value.value === "" ? null : Number(value.value)) : value.value;
    try {
      await api("PUT", `/${def.name}`, Object.fromEntries(uuids.map((u) => [u, { [field.value]: v }])));
      errors.value = {};
      message.value = `${uuids.length} records changed.`;
      onDone();
    } catch (err) {
      errors.value = (err as ApiError).body?.errors ?? { "": (err as Error).message };
    }
  };
  return (
    <section class="bulk" aria-label="Bulk actions">
      <strong>{uuids.length} selected</strong>
      {def.can.delete && <button type="button" class="danger" onClick={removeAll}>Delete selected</button>}
      <button type="button" onClick={exportSelected}>Export selected</button>
      {def.can.edit && settable.length > 0 && (
        <form onSubmit={setField} class="inline">
          <label>Set <select value={field.value} onChange={(e) => { field.value = (e.target as HTMLSelectElement).value; value.value = ""; }}>
            <option value="">field…</option>
            {settable.map(([k, f]) => <option key={k} value={k}>{f.label}</option>)}
          </select></label>
          {chosen && (chosen.type === "select" || chosen.type === "boolean" ? (
            <label>to <select value={value.value} onChange={(e) => (value.value = (e.target as HTMLSelectElement).value)}>
              <option value="">—</option>
              {(chosen.type === "boolean" ? [{ value: "1", label: "Yes" }, { value: "0", label: "No" }] : chosen.options ?? []).map((o) => <option key={o.value} value={o.value}>{o.label}</option>)}
            </select></label>
          ) : <label>to <input value={value.value} onInput={(e) => { value.value = (e.target as HTMLInputElement).value; }} inputMode={chosen.type === "number" ? "decimal" : "text"} /></label>)}
          <button type="submit" disabled={!chosen}>Apply to all</button>
        </form>
      )}
      {message.value && <span role="status">{message.value}</span>}
      {Object.keys(errors.value).length > 0 && (
        <ul class="error" role="alert">{Object.entries(errors.value).map(([k, v]) => <li key={k}>{k}: {v}</li>)}</ul>
      )}
    </section>
  );
}

/** The overview's filters: one select per `admin_filter` field; the choice goes into the URL. */
import { setParams } from "../router";
import type { Selection } from "../filters";
import type { ResourceView } from "../state";
import { t } from "../i18n";

export function FilterBar({ def, selection }: { def: ResourceView; selection: Selection }) {
  if (!def.filters.length) return null;
  const choose = (field: string, value: string) => setParams((p) => { p.set(`filter[${field}]`, value); p.delete("page"); });
  return (
    <div class="filters" role="group" aria-label={t("Filters")}>
      {def.filters.map((f) => (
        <label key={f.field}>
          {f.label}
          <select name={`filter[${f.field}]`} value={selection[f.field] ?? ""} onChange={(e) => choose(f.field, (e.target as HTMLSelectElement).value)}>
            <option value="">{t("All")}</option>
            {f.options.map((o) => <option key={o.value} value={o.value}>{o.label}</option>)}
          </select>
        </label>
      ))}
    </div>
  );
}

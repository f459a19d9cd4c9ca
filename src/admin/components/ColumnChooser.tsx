/** Which columns the overview shows, remembered per resource in this browser. */
import type { ResourceView } from "../state";
import { columnLabel } from "./Cell";
import { t } from "../i18n";

export function ColumnChooser({ def, columns, onChange }: { def: ResourceView; columns: string[]; onChange: (cols: string[]) => void }) {
  const all = [...new Set([...def.columns, ...Object.keys(def.fields).filter((k) => !def.fields[k].write_only), "_created", "_modified"])];
  const flip = (c: string) => onChange(columns.includes(c) ? columns.filter((x) => x !== c) : all.filter((x) => x === c || columns.includes(x)));
  return (
    <details class="menu columns">
      <summary>{t("Columns")}</summary>
      <ul>
        {all.map((c) => <li key={c}><label><input type="checkbox" checked={columns.includes(c)} onChange={() => flip(c)} /> {columnLabel(c, def.fields[c])}</label></li>)}
        <li><button type="button" class="link" onClick={() => onChange(def.columns)}>{t("Reset")}</button></li>
      </ul>
    </details>
  );
}

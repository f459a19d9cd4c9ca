/**
 * A `select` field. Naming another resource (that the user may view): a relation picker that
 * searches it. `multi` with fixed options: a tag picker. Otherwise a dropdown of the options.
 */
import type { FieldProps } from "./types";
import { resources } from "../state";
import { RelationPicker, type EditorComponent } from "./RelationPicker";
import { TagPicker } from "./TagPicker";

/** `Editor` (FieldEditor) lets a relation picker show the other resource's form in its "Create new" drawer. */
export function SelectField(p: FieldProps & { Editor?: EditorComponent }) {
  const { id, field, value, onChange, readOnly } = p;
  if (field.resource && resources.value[field.resource]) return <RelationPicker {...p} />;
  if (field.multi) return <TagPicker {...p} />;
  const options = field.options ?? [];
  const v = value === null || value === undefined ? "" : String(value);
  return (
    <select id={id} value={v} required={field.required} disabled={readOnly} onChange={(e) => onChange((e.target as HTMLSelectElement).value)}>
      <option value="">—</option>
      {!options.some((o) => o.value === v) && v && <option value={v}>{v}</option>}
      {options.map((o) => <option key={o.value} value={o.value}>{o.label}</option>)}
    </select>
  );
}

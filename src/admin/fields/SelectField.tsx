/** A `select` field: options from the definition, or records of the resource it names. */
import type { FieldProps } from "./types";

export function SelectField({ id, field, value, onChange, readOnly }: FieldProps) {
  const options = field.options ?? [];
  if (field.multi) {
    const chosen = Array.isArray(value) ? value.map(String) : [];
    return (
      <select id={id} multiple disabled={readOnly} onChange={(e) => onChange([...(e.target as HTMLSelectElement).selectedOptions].map((o) => o.value))}>
        {options.map((o) => <option key={o.value} value={o.value} selected={chosen.includes(o.value)}>{o.label}</option>)}
      </select>
    );
  }
  const v = value === null || value === undefined ? "" : String(value);
  return (
    <select id={id} value={v} required={field.required} disabled={readOnly} onChange={(e) => onChange((e.target as HTMLSelectElement).value)}>
      <option value="">—</option>
      {!options.some((o) => o.value === v) && v && <option value={v}>{v}</option>}
      {options.map((o) => <option key={o.value} value={o.value}>{o.label}</option>)}
    </select>
  );
}

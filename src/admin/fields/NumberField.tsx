/** A `number` field: empty is null, anything else a number (min and max from the definition). */
import type { FieldProps } from "./types";

export function NumberField({ id, field, value, onChange, readOnly, label }: FieldProps) {
  return <input id={id} aria-label={label} type="number" step="any" value={value === null || value === undefined ? "" : String(value)} required={field.required} readOnly={readOnly}
    min={field.min} max={field.max} onInput={(e) => { const v = (e.target as HTMLInputElement).value; onChange(v === "" ? null : Number(v)); }} />;
}

/** A `textarea` field. */
import type { FieldProps } from "./types";

export function TextareaField({ id, field, value, onChange, readOnly, label }: FieldProps) {
  return <textarea id={id} aria-label={label} rows={5} value={value === null || value === undefined ? "" : String(value)} required={field.required} readOnly={readOnly} onInput={(e) => onChange((e.target as HTMLTextAreaElement).value)} />;
}

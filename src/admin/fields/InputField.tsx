/** The single-line input behind the text-like field types. */
import type { FieldProps } from "./types";

export function InputField({ id, field, value, onChange, readOnly, type, label }: FieldProps & { type: "text" | "email" | "url" | "color" | "date" }) {
  return (
    <input id={id} aria-label={label} type={type as "text"} value={value === null || value === undefined ? "" : String(value)} required={field.required} readOnly={readOnly}
      min={field.min} max={field.max} onInput={(e) => onChange((e.target as HTMLInputElement).value)} />
  );
}

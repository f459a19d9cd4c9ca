/** A `boolean` field as a switch. */
import type { FieldProps } from "./types";

export function BooleanField({ id, value, onChange, readOnly, label }: FieldProps) {
  return <input id={id} aria-label={label} type="checkbox" role="switch" checked={value === true} disabled={readOnly} onChange={(e) => onChange((e.target as HTMLInputElement).checked)} />;
}

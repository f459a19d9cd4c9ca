/** A `boolean` field as a switch. */
import type { FieldProps } from "./types";

export function BooleanField({ id, value, onChange, readOnly }: FieldProps) {
  return <input id={id} type="checkbox" role="switch" checked={value === true} disabled={readOnly} onChange={(e) => onChange((e.target as HTMLInputElement).checked)} />;
}

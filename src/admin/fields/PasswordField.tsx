/** A `password` field: never shown; left empty it keeps the stored password. */
import type { FieldProps } from "./types";

export function PasswordField({ id, value, onChange, readOnly, label }: FieldProps) {
  return <input id={id} aria-label={label} type="password" autocomplete="new-password" placeholder="unchanged" value={typeof value === "string" ? value : ""} readOnly={readOnly} onInput={(e) => onChange((e.target as HTMLInputElement).value)} />;
}

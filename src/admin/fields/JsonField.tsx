/** Types whose editors come with the forms (html, media, groups, maps): the value as JSON text for now. */
import { useSignal } from "@preact/signals";
import type { FieldProps } from "./types";

export function JsonField({ id, value, onChange, readOnly, label }: FieldProps) {
  const text = useSignal(value === undefined ? "" : JSON.stringify(value, null, 2));
  const bad = useSignal(false);
  return <textarea id={id} aria-label={label} class={bad.value ? "invalid" : undefined} rows={4} value={text.value} readOnly={readOnly} onInput={(e) => {
    text.value = (e.target as HTMLTextAreaElement).value;
    try {
      onChange(text.value.trim() === "" ? null : JSON.parse(text.value));
      bad.value = false;
    } catch {
      bad.value = true;
    }
  }} />;
}

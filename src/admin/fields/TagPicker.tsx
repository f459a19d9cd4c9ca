/**
 * A `multi` select of fixed options as a tag picker: the chosen values as chips (each with a remove
 * button), and a text box that filters the remaining options as you type. Enter picks, Backspace in
 * the empty text box takes back the last chip.
 */
import { useRef } from "preact/hooks";
import { useSignal } from "@preact/signals";
import type { FieldProps } from "./types";
import { Chips, Combobox, type ComboOption } from "../components/Combobox";
import { t, tn } from "../i18n";

export function TagPicker(p: FieldProps) {
  const { id, field, value, onChange, readOnly, error } = p;
  /** Set when no `<label for>` names the editor (a language of a translated field). */
  const name = (p as { label?: string }).label;
  const text = useSignal("");
  const open = useSignal(false);
  const input = useRef<HTMLInputElement>(null);
  const options = field.options ?? [];
  const chosen = Array.isArray(value) ? value.map(String) : [];
  const labelOf = (v: string) => options.find((o) => o.value === v)?.label ?? v;
  const chips = chosen.map((v) => ({ key: v, label: labelOf(v) }));
  if (readOnly) return <div id={id} class="picker multi read-only"><Chips items={chips} label={name ?? field.label} />{!chips.length && <span class="muted">—</span>}</div>;

  const q = text.value.trim().toLowerCase();
  const remaining: ComboOption[] = options
    .filter((o) => !chosen.includes(o.value) && (!q || o.label.toLowerCase().includes(q)))
    .map((o) => ({ key: o.value, label: o.label }));
  const left = options.length - chosen.length;
  const status = remaining.length ? tn(remaining.length, "{n} option.", "{n} options.") : left ? t("No option matches “{text}”.", { text: text.value.trim() }) : t("Every option is chosen.");
  const remove = (v: string) => {
    onChange(chosen.filter((x) => x !== v));
    input.current?.focus();
  };
  return (
    <div class="picker multi" onClick={(e) => { if (e.target === e.currentTarget) input.current?.focus(); }}>
      <Chips items={chips} label={`${name ?? field.label}: chosen`} onRemove={remove} />
      <Combobox id={id} label={t("{name} options", { name: name ?? field.label })} ariaLabel={name} text={text.value} options={remaining} open={open.value} inputRef={input}
        onText={(t) => (text.value = t)} onOpen={(o) => (open.value = o)}
        onPick={(o) => { onChange([...chosen, o.key]); text.value = ""; open.value = false; }}
        onBackspaceEmpty={() => { if (chosen.length) onChange(chosen.slice(0, -1)); }}
        status={status} note={open.value && !remaining.length ? status : undefined} required={field.required} invalid={Boolean(error)} />
    </div>
  );
}

/**
 * An editable combobox with a listbox popup, after the WAI-ARIA pattern "list autocomplete with
 * automatic selection": focus stays in the text box, the first option is the active one, arrows
 * move it (announced through aria-activedescendant), Enter picks it, Escape closes the list. The
 * relation and tag pickers build on it, with the chosen values as chips beside it.
 */
import type { Ref } from "preact";
import { useEffect, useLayoutEffect, useRef } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { Icon } from "./Icon";
import { t } from "../i18n";

export type ComboOption = { key: string; label: string; create?: boolean };

export type ComboboxProps = {
  /** The text box's id: the field's label names it. */
  id: string;
  /** Names the listbox ("Author options"). */
  label: string;
  /** Names the text box when no `<label for>` does (one language of a translated field). */
  ariaLabel?: string;
  text: string;
  options: ComboOption[];
  open: boolean;
  onText: (text: string) => void;
  onOpen: (open: boolean) => void;
  onPick: (option: ComboOption) => void;
  onBlur?: () => void;
  /** Backspace in the empty text box (a tag picker takes back its last chip). */
  onBackspaceEmpty?: () => void;
  /** Read to screen readers as the list changes ("20 of 300 authors; type to narrow"). */
  status: string;
  /** Shown under the options (the status, when there is more than the list shows). */
  note?: string;
  required?: boolean;
  invalid?: boolean;
  placeholder?: string;
  inputRef?: Ref<HTMLInputElement>;
  /** The text stands for a chosen value: focusing selects it all, so typing replaces it. */
  selectOnFocus?: boolean;
};

export function Combobox(p: ComboboxProps) {
  const active = useSignal(-1);
  const focusedBefore = useRef(false);
  const listId = `${p.id}-options`;
  const n = p.options.length;
  const expanded = p.open && n > 0;
  // A new list makes its first option the active one (Enter picks what typing found), in the
  // commit that shows it: an Enter right after the options appear picks the first of them.
  const keys = p.options.map((o) => o.key).join("\n");
  useLayoutEffect(() => {
    active.value = n ? 0 : -1;
  }, [keys]);
  const current = expanded && active.value >= 0 && active.value < n ? active.value : -1;
  // The active option stays in sight as the arrows move through a list longer than its box.
  useEffect(() => {
    if (current >= 0) document.getElementById(`${p.id}-option-${current}`)?.scrollIntoView({ block: "nearest" });
  }, [current, keys]);

  const onKeyDown = (e: KeyboardEvent) => {
    switch (e.key) {
      case "ArrowDown":
        e.preventDefault();
        if (!p.open) { p.onOpen(true); active.value = 0; } else if (n) active.value = current < 0 ? 0 : (current + 1) % n;
        break;
      case "ArrowUp":
        e.preventDefault();
        if (!p.open) { p.onOpen(true); active.value = Math.max(0, n - 1); } else if (n) active.value = current <= 0 ? n - 1 : current - 1;
        break;
      case "Enter":
        // Enter never submits the form from here: it picks, or does nothing.
        e.preventDefault();
        if (current >= 0) p.onPick(p.options[current]);
        break;
      case "Escape":
        // Closes the list only: a drawer around the picker stays open.
        if (p.open) { e.preventDefault(); e.stopPropagation(); p.onOpen(false); }
        break;
      case "Backspace":
        if (p.text === "" && p.onBackspaceEmpty) p.onBackspaceEmpty();
        break;
    }
  };

  return (
    <div class="combo">
      <input id={p.id} ref={p.inputRef} type="text" role="combobox" aria-label={p.ariaLabel} autocomplete="off" spellcheck={false} value={p.text} placeholder={p.placeholder}
        aria-autocomplete="list" aria-expanded={expanded} aria-controls={listId} aria-activedescendant={current >= 0 ? `${p.id}-option-${current}` : undefined}
        aria-required={p.required || undefined} aria-invalid={p.invalid || undefined}
        onInput={(e) => { p.onText((e.target as HTMLInputElement).value); if (!p.open) p.onOpen(true); }}
        onClick={() => { if (!p.open) p.onOpen(true); }}
        onFocus={(e) => { if (p.selectOnFocus) e.currentTarget.select(); }}
        onMouseDown={(e) => { focusedBefore.current = document.activeElement === e.currentTarget; }}
        onMouseUp={(e) => { if (p.selectOnFocus && !focusedBefore.current) { e.preventDefault(); e.currentTarget.select(); } }}
        onKeyDown={onKeyDown}
        onBlur={() => { if (p.open) p.onOpen(false); p.onBlur?.(); }} />
      {/* A press inside the popup keeps the focus in the text box. */}
      <div class="combo-popup" hidden={!p.open || (!n && !p.note)} onMouseDown={(e) => e.preventDefault()}>
        <ul role="listbox" id={listId} aria-label={p.label} hidden={!expanded}>
          {p.options.map((o, i) => (
            <li key={o.key} id={`${p.id}-option-${i}`} role="option" aria-selected={i === current} class={o.create ? "create" : undefined}
              onClick={() => p.onPick(o)} onMouseMove={() => { if (active.value !== i) active.value = i; }}>
              {o.label}
            </li>
          ))}
        </ul>
        {p.note && <p class="combo-note" aria-hidden="true">{p.note}</p>}
      </div>
      <p class="sr-only" role="status">{p.open ? p.status : ""}</p>
    </div>
  );
}

/** The chosen values as chips, each with its own remove button ("Remove News"). */
export function Chips({ items, label, onRemove }: { items: { key: string; label: string }[]; label: string; onRemove?: (key: string) => void }) {
  if (!items.length) return null;
  return (
    <ul class="chips" aria-label={label}>
      {items.map((it) => (
        <li key={it.key}>
          <span class="chip-label">{it.label}</span>
          {onRemove && (
            <button type="button" class="chip-remove" aria-label={t("Remove {name}", { name: it.label })} onClick={() => onRemove(it.key)}>
              <Icon name="close" size={14} />
            </button>
          )}
        </li>
      ))}
    </ul>
  );
}

/**
 * An `html` field: a Tiptap editor with the field's buttons (default bold, italic, removeFormat),
 * custom buttons, a bubble toolbar on selected text, and images from the media library at one of
 * `media_sizes`. Pasting keeps plain text unless `paste_html`.
 */
import { useEffect, useRef } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { Editor } from "@tiptap/core";
import { extensionsFor } from "../editor/extensions";
import { applyLink, buttonName, buttonSpecs, onAskLink, type ButtonSpec } from "../editor/buttons";
import { mediaImageAttrs } from "../editor/media-sizes";
import { MediaPicker } from "../components/MediaPicker";
import { LinkDialog } from "../components/LinkDialog";
import { Icon } from "../components/Icon";
import type { FieldProps } from "./types";
import { t } from "../i18n";

function Toolbar({ specs, editor, tick, label }: { specs: ButtonSpec[]; editor: Editor; tick: number; label: string }) {
  return (
    <>
      {specs.map((b) => (
        <button key={b.name} type="button" class={`tool${b.active(editor) ? " active" : ""}`} data-button={b.name} aria-pressed={b.active(editor)}
          title={b.label} aria-label={`${buttonName(b)} (${label})`} data-tick={tick}
          onMouseDown={(e) => e.preventDefault()} onClick={() => b.run(editor)}>
          {b.svg ? <Icon name={b.svg} /> : b.icon ?? b.label}
        </button>
      ))}
    </>
  );
}

export function HtmlField({ id, name, field, value, onChange, readOnly, def, label }: FieldProps) {
  /** The editor's name: the field's, or one language's ("Body (de)"). */
  const named = label ?? field.label;
  const host = useRef<HTMLDivElement>(null);
  const editor = useRef<Editor | null>(null);
  const tick = useSignal(0);
  const picking = useSignal(false);
  /** The link dialog is open, on the link at the cursor (its address) or a new one (""). */
  const linking = useSignal<string | null>(null);
  const bubble = useSignal<{ left: number; top: number } | null>(null);
  const buttons = field.buttons ?? ["bold", "italic", "removeFormat"];
  const specs = buttonSpecs(buttons, def.buttons, name);
  const html = typeof value === "string" ? value : "";

  /** The bubble toolbar sits above a non-empty selection. */
  const placeBubble = (e: Editor) => {
    const { from, to, empty } = e.state.selection;
    if (empty || !host.current) {
      bubble.value = null;
      return;
    }
    const a = e.view.coordsAtPos(from);
    const b = e.view.coordsAtPos(to);
    const box = host.current.getBoundingClientRect();
    bubble.value = { left: (a.left + b.left) / 2 - box.left, top: Math.max(0, a.top - box.top - 40) };
  };

  useEffect(() => {
    const ed = new Editor({
      element: host.current!,
      extensions: extensionsFor(buttons, def.buttons, Boolean(field.media)),
      content: html,
      editable: !readOnly,
      editorProps: {
        attributes: { id, class: "html-editor", role: "textbox", "aria-multiline": "true", "aria-label": named },
        handlePaste: (view, event) => {
          if (field.paste_html) return false;
          const text = event.clipboardData?.getData("text/plain") ?? "";
          view.dispatch(view.state.tr.insertText(text));
          return true;
        },
      },
      onUpdate: ({ editor: e }) => onChange(e.isEmpty ? "" : e.getHTML()),
      onTransaction: ({ editor: e }) => {
        tick.value += 1;
        placeBubble(e);
      },
      onFocus: ({ editor: e }) => placeBubble(e),
      // Clicking a bubble button blurs for a moment: hide only if the editor stays unfocused.
      onBlur: () => setTimeout(() => { if (!editor.current?.isFocused) bubble.value = null; }, 150),
    });
    editor.current = ed;
    onAskLink(ed, () => (linking.value = (ed.getAttributes("link").href as string | undefined) ?? ""));
    // The toolbar renders once the editor exists: render again now, not at the first transaction
    // (a keystroke), so that it is there to reach by keyboard and to start with a heading.
    tick.value += 1;
    return () => ed.destroy();
  }, []);

  // A value set from outside (a translation, a document import) replaces the content.
  useEffect(() => {
    const ed = editor.current;
    if (ed && !ed.isFocused && html !== (ed.isEmpty ? "" : ed.getHTML())) ed.commands.setContent(html, { emitUpdate: false });
  }, [html]);

  // Read before the editor exists too: only a signal read in render subscribes it.
  const ticks = tick.value;
  const ed = editor.current;
  const main = specs.filter((s) => !s.insert);
  const inserts = specs.filter((s) => s.insert);
  const bubbles = specs.filter((s) => s.bubble);
  return (
    <div class="html-field" data-html-field={name}>
      {!readOnly && ed && (
        <div class="toolbar-row" role="toolbar" aria-label={t("{name}: formatting", { name: named })}>
          <Toolbar specs={main} editor={ed} tick={ticks} label={named} />
          {(field.media || inserts.length > 0) && <span class="sep" aria-hidden="true" />}
          {field.media && <button type="button" class="tool" data-button="media" onClick={() => (picking.value = true)}>{t("Media")}</button>}
          <Toolbar specs={inserts} editor={ed} tick={ticks} label={named} />
        </div>
      )}
      <div class="editor-host" ref={host}>
        {!readOnly && ed && bubble.value && bubbles.length > 0 && (
          <div class="bubble" role="toolbar" aria-label={t("Selection")} style={{ left: `${bubble.value.left}px`, top: `${bubble.value.top}px` }}>
            <Toolbar specs={bubbles} editor={ed} tick={ticks} label={`${named}, selection`} />
          </div>
        )}
      </div>
      {picking.value && ed && (
        <MediaPicker accept="image/*" sizes={field.media_sizes} onClose={() => (picking.value = false)}
          onPick={(f, size) => { ed.chain().focus().setImage(mediaImageAttrs(f, size) as never).run(); picking.value = false; }} />
      )}
      {linking.value !== null && ed && (
        <LinkDialog current={linking.value} onClose={() => (linking.value = null)}
          onApply={(href, text) => { linking.value = null; applyLink(ed, href, text); }} />
      )}
    </div>
  );
}

/** What each editor button does and when it shows as active: the built-in ones and the custom kinds. */
import type { Editor } from "@tiptap/core";
import type { CustomButton } from "../state";
import type { IconName } from "../components/Icon";
import { customMarkName, customNodeName } from "./extensions";
import { t } from "../i18n";

/** `icon` is text shown instead of the label, `svg` a bundled icon shown instead of both. */
export type ButtonSpec = { name: string; label: string; icon?: string; svg?: IconName; run: (editor: Editor) => void; active: (editor: Editor) => boolean; insert?: boolean; bubble?: boolean };

/**
 * A button's accessible name: its label, after the text it shows when that text has letters or
 * digits the label lacks ("H2 Heading 2", "x₂ Subscript"), so that the name holds what is seen and a
 * speech user can say it (WCAG 2.5.3, label in name). Signs alone (•, ⌫) are not words to say.
 */
export function buttonName(b: ButtonSpec): string {
  const shown = b.svg ? "" : (b.icon ?? "").trim();
  return /[\p{L}\p{N}]/u.test(shown) && !b.label.toLowerCase().includes(shown.toLowerCase()) ? `${shown} ${b.label}` : b.label;
}

const chain = (e: Editor) => e.chain().focus();

/** Each editor's link dialog, opened by its link buttons (the html field mounts it and registers here). */
const linkDialogs = new WeakMap<Editor, () => void>();
export const onAskLink = (e: Editor, open: () => void) => linkDialogs.set(e, open);

/**
 * Sets the link of the selection, or of the link around the cursor, to `href`; an empty one removes
 * it. With nothing selected and no link at the cursor, `text` (else the address) is inserted as the
 * link's text.
 */
export function applyLink(e: Editor, href: string, text?: string): void {
  const h = href.trim();
  if (h === "") chain(e).extendMarkRange("link").unsetLink().run();
  else if (e.state.selection.empty && !e.isActive("link")) chain(e).insertContent({ type: "text", text: text || h, marks: [{ type: "link", attrs: { href: h } }] }).run();
  else chain(e).extendMarkRange("link").setLink({ href: h }).run();
}

/** The link dialog: an address typed, or a page of the site chosen (components/LinkDialog.tsx). */
function askLink(e: Editor) {
  linkDialogs.get(e)?.();
}

const BUILTIN: Record<string, Omit<ButtonSpec, "name">> = {
  bold: { label: t("Bold"), icon: "B", run: (e) => chain(e).toggleBold().run(), active: (e) => e.isActive("bold"), bubble: true },
  italic: { label: t("Italic"), icon: "I", run: (e) => chain(e).toggleItalic().run(), active: (e) => e.isActive("italic"), bubble: true },
  underline: { label: t("Underline"), icon: "U", run: (e) => chain(e).toggleUnderline().run(), active: (e) => e.isActive("underline") },
  strikethrough: { label: t("Strikethrough"), icon: "S", run: (e) => chain(e).toggleStrike().run(), active: (e) => e.isActive("strike") },
  subscript: { label: t("Subscript"), icon: "x₂", run: (e) => chain(e).toggleMark("subscript").run(), active: (e) => e.isActive("subscript") },
  superscript: { label: t("Superscript"), icon: "x²", run: (e) => chain(e).toggleMark("superscript").run(), active: (e) => e.isActive("superscript") },
  h2: { label: t("Heading 2"), icon: "H2", run: (e) => chain(e).toggleHeading({ level: 2 }).run(), active: (e) => e.isActive("heading", { level: 2 }) },
  h3: { label: t("Heading 3"), icon: "H3", run: (e) => chain(e).toggleHeading({ level: 3 }).run(), active: (e) => e.isActive("heading", { level: 3 }) },
  h4: { label: t("Heading 4"), icon: "H4", run: (e) => chain(e).toggleHeading({ level: 4 }).run(), active: (e) => e.isActive("heading", { level: 4 }) },
  quote: { label: t("Quote"), svg: "quote", run: (e) => chain(e).toggleBlockquote().run(), active: (e) => e.isActive("blockquote") },
  pre: { label: t("Preformatted"), icon: "</>", run: (e) => chain(e).toggleCodeBlock().run(), active: (e) => e.isActive("codeBlock") },
  orderedlist: { label: t("Numbered list"), icon: "1.", run: (e) => chain(e).toggleOrderedList().run(), active: (e) => e.isActive("orderedList") },
  unorderedlist: { label: t("Bulleted list"), icon: "•", run: (e) => chain(e).toggleBulletList().run(), active: (e) => e.isActive("bulletList") },
  anchor: { label: t("Link"), svg: "link", run: askLink, active: (e) => e.isActive("link"), bubble: true },
  link: { label: t("Link"), svg: "link", run: askLink, active: (e) => e.isActive("link") },
  removeFormat: { label: t("Remove formatting"), icon: "⌫", run: (e) => chain(e).unsetAllMarks().clearNodes().run(), active: () => false },
};

/** execCommand names a `command` button may use, as editor commands. */
const COMMANDS: Record<string, string> = {
  bold: "bold", italic: "italic", underline: "underline", strikeThrough: "strikethrough", subscript: "subscript",
  superscript: "superscript", insertOrderedList: "orderedlist", insertUnorderedList: "unorderedlist", createLink: "anchor", removeFormat: "removeFormat",
};

/** True when the selection sits inside an element matching `selector` (a custom button's `active`). */
function insideSelector(e: Editor, selector: string): boolean {
  const { node } = e.view.domAtPos(e.state.selection.from);
  const el = node instanceof Element ? node : node.parentElement;
  try {
    return Boolean(el?.closest(selector)) && e.view.dom.contains(el!.closest(selector));
  } catch {
    return false;
  }
}

function customSpec(name: string, b: CustomButton, field: string): ButtonSpec {
  const base = { name, label: b.label ?? name, icon: b.icon, insert: b.insert, bubble: b.bubble };
  let run: (e: Editor) => void = () => undefined;
  let active: (e: Editor) => boolean = () => false;
  switch (b.kind) {
    case "command": {
      const builtin = BUILTIN[COMMANDS[b.command ?? ""] ?? ""];
      if (builtin) ({ run, active } = builtin);
      break;
    }
    case "block": {
      const level = /^h([2-4])$/.exec(b.tag ?? "");
      if (level) ({ run, active } = BUILTIN[`h${level[1]}`]);
      else if (b.tag === "blockquote") ({ run, active } = BUILTIN.quote);
      else if (b.tag === "pre") ({ run, active } = BUILTIN.pre);
      else if (b.tag === "p") run = (e) => chain(e).setParagraph().run();
      else {
        const node = customNodeName(name);
        run = (e) => chain(e).toggleNode(node, "paragraph").run();
        active = (e) => e.isActive(node);
      }
      break;
    }
    case "list": ({ run, active } = BUILTIN.unorderedlist); break;
    case "link": ({ run, active } = BUILTIN.anchor); break;
    case "wrap": {
      const mark = customMarkName(name);
      run = (e) => chain(e).toggleMark(mark).run();
      active = (e) => e.isActive(mark);
      break;
    }
    case "insert": run = (e) => chain(e).insertContent(b.html ?? "").run(); break;
    case "event":
      run = (e) => e.view.dom.dispatchEvent(new CustomEvent(b.event ?? name, { bubbles: true, detail: { field, button: name, html: e.getHTML() } }));
      break;
  }
  const byKind = active;
  return { ...base, run, active: b.active ? (e) => insideSelector(e, b.active!) : byKind };
}

export function buttonSpecs(buttons: string[], custom: Record<string, CustomButton>, field: string): ButtonSpec[] {
  return buttons.flatMap((name) => {
    if (custom[name]) return [customSpec(name, custom[name], field)];
    const b = BUILTIN[name];
    return b ? [{ name, ...b }] : [];
  });
}

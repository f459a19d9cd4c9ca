/**
 * The Tiptap schema of one html field: only what its buttons can produce (the server keeps exactly
 * that markup, so what the editor makes survives a save unchanged), plus the custom buttons'
 * block and wrap tags as nodes and marks of their own.
 */
import { Mark, Node, mergeAttributes, type AnyExtension } from "@tiptap/core";
import StarterKit from "@tiptap/starter-kit";
import Image from "@tiptap/extension-image";
import type { CustomButton } from "../state";

const Subscript = Mark.create({
  name: "subscript",
  excludes: "superscript",
  parseHTML: () => [{ tag: "sub" }],
  renderHTML: ({ HTMLAttributes }) => ["sub", mergeAttributes(HTMLAttributes), 0],
});
const Superscript = Mark.create({
  name: "superscript",
  excludes: "subscript",
  parseHTML: () => [{ tag: "sup" }],
  renderHTML: ({ HTMLAttributes }) => ["sup", mergeAttributes(HTMLAttributes), 0],
});

/** Media images keep their responsive attributes (see docs/admin.md, "media_sizes"). */
const MediaImage = Image.extend({
  addAttributes() {
    const keep = (name: string) => ({ default: null, parseHTML: (el: HTMLElement) => el.getAttribute(name), renderHTML: (a: Record<string, unknown>) => (a[name] ? { [name]: a[name] } : {}) });
    return { ...this.parent?.(), srcset: keep("srcset"), sizes: keep("sizes"), class: keep("class") };
  },
});

export const customNodeName = (name: string) => `custom_block_${name.replace(/\W/g, "_")}`;
export const customMarkName = (name: string) => `custom_wrap_${name.replace(/\W/g, "_")}`;

const HEADINGS: Record<string, 2 | 3 | 4> = { h2: 2, h3: 3, h4: 4 };
const BUILTIN_BLOCK_TAGS = new Set(["p", "h2", "h3", "h4", "blockquote", "pre"]);

export function extensionsFor(buttons: string[], custom: Record<string, CustomButton>, media: boolean): AnyExtension[] {
  const has = (b: string) => buttons.includes(b);
  const kinds = buttons.map((b) => custom[b]).filter(Boolean);
  const commands = new Set(kinds.filter((k) => k.kind === "command").map((k) => k.command));
  const levels = Object.entries(HEADINGS).filter(([b]) => has(b) || kinds.some((k) => k.kind === "block" && k.tag === b)).map(([, l]) => l);
  const lists = has("orderedlist") || has("unorderedlist") || kinds.some((k) => k.kind === "list") || commands.has("insertOrderedList") || commands.has("insertUnorderedList");
  const link = has("anchor") || has("link") || kinds.some((k) => k.kind === "link") || commands.has("createLink");
  const hr = kinds.some((k) => k.kind === "insert" && /<hr\b/i.test(k.html ?? ""));
  const exts: AnyExtension[] = [
    StarterKit.configure({
      bold: has("bold") || commands.has("bold") ? {} : false,
      italic: has("italic") || commands.has("italic") ? {} : false,
      strike: has("strikethrough") || commands.has("strikeThrough") ? {} : false,
      underline: has("underline") || commands.has("underline") ? {} : false,
      heading: levels.length ? { levels } : false,
      blockquote: has("quote") || kinds.some((k) => k.kind === "block" && k.tag === "blockquote") ? {} : false,
      codeBlock: has("pre") ? {} : false,
      code: false,
      bulletList: lists ? {} : false,
      orderedList: lists ? {} : false,
      listItem: lists ? {} : false,
      listKeymap: lists ? {} : false,
      horizontalRule: hr ? {} : false,
      // An empty paragraph after every block would be stored and shown as a gap.
      trailingNode: false,
      link: link ? { openOnClick: false, autolink: false, HTMLAttributes: { target: null, rel: null } } : false,
    }),
  ];
  if (has("subscript") || commands.has("subscript")) exts.push(Subscript);
  if (has("superscript") || commands.has("superscript")) exts.push(Superscript);
  if (media) exts.push(MediaImage.configure({ inline: false }));
  for (const name of buttons) {
    const b = custom[name];
    if (!b?.tag) continue;
    if (b.kind === "block" && !BUILTIN_BLOCK_TAGS.has(b.tag)) {
      exts.push(Node.create({
        name: customNodeName(name), group: "block", content: "inline*", defining: true,
        parseHTML: () => [{ tag: b.tag! }],
        renderHTML: ({ HTMLAttributes }) => [b.tag!, HTMLAttributes, 0],
      }));
    }
    if (b.kind === "wrap") {
      const cls = b.class?.trim();
      exts.push(Mark.create({
        name: customMarkName(name),
        parseHTML: () => [{ tag: cls ? `${b.tag}.${cls.split(/\s+/).join(".")}` : b.tag! }],
        renderHTML: () => [b.tag!, cls ? { class: cls } : {}, 0],
      }));
    }
  }
  return exts;
}

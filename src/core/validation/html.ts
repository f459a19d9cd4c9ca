/** Cleans html field values down to the markup their editor buttons can produce. */
import sanitizeHtml from "sanitize-html";
import type { CustomButton, FieldDef } from "../definitions/types";

const DEFAULT_BUTTONS = "bold,italic,removeFormat";
const LINK_ATTRS = ["href", "title", "target", "rel"];

/** Built-in buttons → the tags (with attributes) they produce. */
const BUILTIN: Record<string, Record<string, string[]>> = {
  bold: { b: [], strong: [] },
  italic: { i: [], em: [] },
  h2: { h2: [] },
  h3: { h3: [] },
  h4: { h4: [] },
  quote: { blockquote: [] },
  pre: { pre: [], code: [] },
  orderedlist: { ol: [], li: [] },
  unorderedlist: { ul: [], li: [] },
  anchor: { a: LINK_ATTRS },
  link: { a: LINK_ATTRS },
  removeFormat: {},
  strikethrough: { s: [], strike: [], del: [] },
  subscript: { sub: [] },
  superscript: { sup: [] },
  underline: { u: [] },
};
const COMMANDS: Record<string, string> = { bold: "bold", italic: "italic", underline: "underline", strikeThrough: "strikethrough", subscript: "subscript", superscript: "superscript", insertOrderedList: "orderedlist", insertUnorderedList: "unorderedlist", createLink: "anchor" };
const MEDIA = { img: ["src", "alt", "title", "width", "height", "srcset", "sizes", "loading", "class"], figure: ["class"], figcaption: [], picture: [], source: ["srcset", "type", "media", "sizes"] };

type Allowed = Record<string, Set<string>>;
const add = (into: Allowed, tags: Record<string, string[]>) => {
  for (const [tag, attrs] of Object.entries(tags)) {
    const set = (into[tag] ??= new Set());
    attrs.forEach((a) => set.add(a));
  }
};

/** Tags and attributes named in a custom `insert` button's html snippet. */
function tagsOf(html: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const m of html.matchAll(/<([a-zA-Z][a-zA-Z0-9-]*)([^>]*)>/g)) {
    const attrs = [...m[2].matchAll(/([a-zA-Z_:][-a-zA-Z0-9_:.]*)\s*=/g)].map((a) => a[1].toLowerCase()).filter((a) => !a.startsWith("on"));
    out[m[1].toLowerCase()] = [...(out[m[1].toLowerCase()] ?? []), ...attrs];
  }
  return out;
}

function customTags(b: CustomButton): Record<string, string[]> {
  switch (b.kind) {
    case "block": return b.tag ? { [b.tag]: [] } : {};
    case "wrap": return b.tag ? { [b.tag]: b.class ? ["class"] : [] } : {};
    case "list": return { ul: [], ol: [], li: [] };
    case "link": return { a: LINK_ATTRS };
    case "insert": return b.html ? tagsOf(b.html) : {};
    case "command": return b.command && COMMANDS[b.command] ? BUILTIN[COMMANDS[b.command]] : {};
    default: return {};
  }
}

const cache = new WeakMap<FieldDef, sanitizeHtml.IOptions>();

export function htmlOptions(field: FieldDef, custom: Record<string, CustomButton> = {}): sanitizeHtml.IOptions {
  const hit = cache.get(field);
  if (hit) return hit;
  const allowed: Allowed = { p: new Set(), br: new Set() };
  for (const name of (field.buttons ?? DEFAULT_BUTTONS).split(",").map((s) => s.trim()).filter(Boolean)) {
    if (BUILTIN[name]) add(allowed, BUILTIN[name]);
    else if (custom[name]) add(allowed, customTags(custom[name]));
  }
  if (field.media) add(allowed, MEDIA);
  const classes: Record<string, string[]> = {};
  for (const b of Object.values(custom)) if (b.kind === "wrap" && b.tag && b.class) (classes[b.tag] ??= []).push(...b.class.split(/\s+/));
  const opts: sanitizeHtml.IOptions = {
    allowedTags: Object.keys(allowed),
    allowedAttributes: Object.fromEntries(Object.entries(allowed).map(([t, a]) => [t, [...a]])),
    allowedClasses: classes,
    allowedSchemes: ["http", "https", "mailto", "tel"],
    allowedSchemesByTag: { img: ["http", "https", "data"] },
    allowProtocolRelative: false,
    disallowedTagsMode: "discard",
  };
  cache.set(field, opts);
  return opts;
}

/**
 * sanitize-html writes void elements as `<img … />`; editors and browsers write `<img …>`. The
 * HTML form is kept, so that what the editor produced is stored unchanged. (Attribute values are
 * escaped by then, so "/>" can only end a tag.)
 */
const VOID_SLASH = /<(img|br|hr|source)(\s[^>]*?)?\s*\/>/g;

export const cleanHtml = (value: string, field: FieldDef, custom?: Record<string, CustomButton>) =>
  sanitizeHtml(value, htmlOptions(field, custom)).replace(VOID_SLASH, "<$1$2>");

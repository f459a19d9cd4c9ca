/** A resource definition as written in DIR/resources/<name>.json (the spec's `.meta`). */

export const FIELD_TYPES = [
  "text", "textarea", "html", "slug", "boolean", "date", "email", "url", "password",
  "image", "file", "upload", "gallery", "select", "number", "color", "location-picker", "group",
] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

export type FieldDef = {
  type: FieldType;
  name?: string;
  required?: boolean;
  admin_col?: boolean;
  admin_filter?: boolean | { default?: unknown; feature?: string };
  multi?: boolean;
  i18n?: boolean;
  accept?: string;
  wrapper_class?: string;
  options?: Record<string, string>;
  resource?: string;
  /** `uuid`: a reference given by name is stored as the referenced record's uuid (users' role). */
  reference?: "uuid";
  source?: string;
  preserve_existing?: boolean;
  longitude_field?: string;
  min?: number;
  max?: number;
  buttons?: string;
  media?: boolean;
  media_sizes?: string;
  paste_html?: boolean;
  fields?: Record<string, FieldDef>;
  [key: string]: unknown;
};

export type CustomButton = {
  kind: "command" | "block" | "list" | "wrap" | "insert" | "event" | "link";
  command?: string;
  tag?: string;
  class?: string;
  html?: string;
  event?: string;
  [key: string]: unknown;
};

export type SitemapDef = { url: string | Record<string, string>; published?: string; each?: string };

/** The definition file's JSON. Unknown root keys are kept as they are. */
export type DefinitionFile = {
  fields: Record<string, FieldDef>;
  sort?: { field: string; flags?: "string" | "numeric" | "text"; order?: "asc" | "desc" };
  validate?: Record<string, string | string[]>;
  languages?: string[];
  ai_prompts?: Record<string, string>;
  name?: { singular?: string; plural?: string };
  appbar?: boolean;
  actions?: { view_url?: string; url?: string };
  events?: { create?: string[]; update?: string[]; delete?: string[] };
  splitdir?: boolean;
  index?: string[];
  unique?: string[];
  upsert?: boolean;
  self_edit?: string;
  hidden?: string;
  encrypt?: string | string[];
  keep_shortcodes?: boolean;
  history?: boolean;
  sitemap?: SitemapDef;
  admin_columns?: string[];
  buttons?: Record<string, CustomButton>;
  [key: string]: unknown;
};

/** A loaded, checked definition with the derived facts every request needs. */
export type ResourceDef = {
  name: string;
  file: string | null;
  raw: DefinitionFile;
  fields: Record<string, FieldDef>;
  /** Fields never returned: `hidden`, `encrypt`, and the always-hidden user fields. */
  hidden: Set<string>;
  encrypted: Set<string>;
  history: boolean;
  upsert: boolean;
  keepShortcodes: boolean;
  /** Built-in resources served only by their own endpoints (e.g. `.files_meta`). */
  internal: boolean;
  /** Each entry is one index: a list of fields (one field, or a composite "a,b"). */
  indexes: string[][];
  unique: string[];
};

export const SYSTEM_FIELDS = ["uuid", "_created", "_modified", "_created_by", "_modified_by"] as const;
export type SystemField = (typeof SYSTEM_FIELDS)[number];
export const isSystemField = (f: string): f is SystemField => (SYSTEM_FIELDS as readonly string[]).includes(f);

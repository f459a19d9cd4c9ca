/**
 * Sitemap URL templates: `[#record.<field>#]` (with `.key` steps into objects), `[#language#]`,
 * `[#sitemap_item#]` and `[#sitemap_item.<key>#]`. Pure functions, unit-tested.
 */
export const TAG = /\[#\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*)\s*#\]/g;

export type Scope = {
  record: Record<string, unknown>;
  language: string | null;
  item: unknown;
  /** i18n values are objects keyed by language; this picks the one of the URL's language. */
  languageFallback: string | null;
};

/** The tags a template uses, as dotted paths ("record.slug", "language"…). */
export const tagsOf = (template: string) => [...template.matchAll(TAG)].map((m) => m[1]);

function walk(value: unknown, steps: string[]): unknown {
  let v = value;
  for (const s of steps) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<string, unknown>)[s];
  }
  return v;
}

function scalar(v: unknown, lang: string | null): string | null {
  // An i18n value: the URL's language.
  if (v !== null && typeof v === "object" && !Array.isArray(v) && lang !== null) v = (v as Record<string, unknown>)[lang];
  if (typeof v === "string") return v === "" ? null : v;
  if (typeof v === "number" && Number.isFinite(v)) return String(v);
  if (typeof v === "boolean") return String(v);
  return null;
}

/** Substituted values are percent-encoded except "/", so a value cannot break out of the URL. */
const encode = (s: string) => encodeURIComponent(s).replace(/%2F/gi, "/");

/** The rendered URL, or null when a tag has no value (that URL is left out of the sitemap). */
export function render(template: string, scope: Scope): string | null {
  let missing = false;
  const lang = scope.language ?? scope.languageFallback;
  const out = template.replace(TAG, (_, path: string) => {
    const [head, ...rest] = path.split(".");
    const v = head === "language" && rest.length === 0 ? scope.language
      : head === "record" && rest.length > 0 ? scalar(walk(scope.record, rest), lang)
      : head === "sitemap_item" ? scalar(walk(scope.item, rest), lang)
      : null;
    if (v === null || v === undefined) {
      missing = true;
      return "";
    }
    return encode(v);
  });
  return missing ? null : out;
}

/** Absolute URL: a template that starts with a scheme is kept, anything else joins the base. */
export function absolute(url: string, base: string): string {
  if (/^https?:\/\//i.test(url)) return url;
  if (base === "") return url.startsWith("/") ? url : `/${url}`;
  return `${base.replace(/\/+$/, "")}${url.startsWith("/") ? "" : "/"}${url}`;
}

/** W3C Datetime (the sitemap protocol's format) from epoch seconds, in UTC. */
export const w3cDate = (sec: number) => new Date(sec * 1000).toISOString().replace(/\.\d{3}Z$/, "+00:00");

export const xmlEscape = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" })[c]!);

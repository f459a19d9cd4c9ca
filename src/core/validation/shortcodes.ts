/**
 * Write rule 3: shortcode delimiters in written values are stored as entities so that a value can
 * never run a shortcode when a page renders it. Applied to every string inside the value.
 */
export function escapeShortcodes<T>(value: T): T {
  if (typeof value === "string") return value.replaceAll("[#", "&#91;#").replaceAll("#]", "#&#93;") as T;
  if (Array.isArray(value)) return value.map(escapeShortcodes) as T;
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, escapeShortcodes(v)])) as T;
  }
  return value;
}

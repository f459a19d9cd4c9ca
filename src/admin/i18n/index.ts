/**
 * The admin's own words in the reader's language. Messages are keyed by their English text (what
 * a translator sees is what the English reader sees); a language is one file mapping those texts
 * to its own, registered in LOCALES. A text a language lacks stays English. `{name}` marks a value
 * put in at run time.
 */
import { de } from "./de";
import type { Catalog } from "./catalog";

/** Each language the admin speaks besides English: add a file beside this one and a line here. */
const LOCALES: Record<string, Catalog> = { de };

/** The first of the browser's languages the admin speaks, else English. */
export function pickLanguage(wanted: readonly string[]): string {
  for (const tag of wanted) {
    const primary = tag.toLowerCase().split("-")[0];
    if (primary === "en" || LOCALES[primary]) return primary;
  }
  return "en";
}

export const language = pickLanguage(typeof navigator === "undefined" ? [] : navigator.languages);
const catalog: Catalog = LOCALES[language] ?? {};
if (typeof document !== "undefined") document.documentElement.lang = language;

/** The text in the admin's language, with `{name}` replaced by `vars.name`. */
export function t(text: string, vars: Record<string, string | number> = {}): string {
  const s = catalog[text] ?? text;
  return s.replace(/\{(\w+)\}/g, (m, k: string) => (k in vars ? String(vars[k]) : m));
}

const plurals = new Intl.PluralRules(language);
/** `one` or `other` by the count, each translated like `t`, with `{n}` the count. */
export function tn(n: number, one: string, other: string, vars: Record<string, string | number> = {}): string {
  return t(plurals.select(n) === "one" ? one : other, { n, ...vars });
}

/** A moment as the reader's language writes it. */
export const when = (ms: number) => new Date(ms).toLocaleString(language === "en" ? undefined : language);

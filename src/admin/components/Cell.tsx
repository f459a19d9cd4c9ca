/** One value of a record in the overview, shown by its field's type. */
import type { FieldView } from "../state";
import { translated } from "../rows";
import { t, tn, when } from "../i18n";

const date = (sec: number) => when(sec * 1000);

/** A single value as words: an option's label, Yes/No, an html text's words. */
export function display(f: FieldView, v: unknown): string {
  if (v === null || v === undefined || v === "") return "—";
  switch (f.type) {
    case "boolean": return v ? t("Yes") : t("No");
    case "select": return f.options?.find((o) => o.value === String(v))?.label ?? String(v);
    case "html": return htmlText(String(v));
    default: return typeof v === "object" ? JSON.stringify(v) : String(v);
  }
}

/** The text an html value shows, without its tags (parsed inertly: nothing loads or runs). */
export function htmlText(html: string): string {
  const doc = new DOMParser().parseFromString(html, "text/html");
  for (const b of doc.querySelectorAll("p, h1, h2, h3, h4, h5, h6, li, br, div, blockquote, tr")) b.append(" ");
  return (doc.body.textContent ?? "").replace(/\s+/g, " ").trim();
}

function one(f: FieldView, v: unknown) {
  if (v === null || v === undefined || v === "") return <span class="muted">—</span>;
  switch (f.type) {
    case "boolean": return v ? <span aria-label={t("yes")}>✓</span> : <span class="muted" aria-label={t("no")}>✗</span>;
    case "select": return <>{f.options?.find((o) => o.value === String(v))?.label ?? String(v)}</>;
    case "image": return typeof v === "string" ? <img class="thumb" src={`/img/${v}/64w`} alt="" loading="lazy" width={48} /> : null;
    case "color": return <span class="swatch" style={{ background: String(v) }} title={String(v)} />;
    case "html": return <>{htmlText(String(v)).slice(0, 120)}</>;
    case "date": return <>{String(v)}</>;
    case "group": return <>{Array.isArray(v) ? tn(v.length, "{n} row", "{n} rows") : "…"}</>;
    default: return <>{typeof v === "object" ? JSON.stringify(v) : String(v).slice(0, 200)}</>;
  }
}

export function Cell({ field, name, value, languages }: { field?: FieldView; name: string; value: unknown; languages: string[] }) {
  if (name === "_created" || name === "_modified") return <>{typeof value === "number" ? date(value) : ""}</>;
  if (!field) return <>{String(value ?? "")}</>;
  const v = field.i18n ? translated(value, languages) : value;
  if (Array.isArray(v) && field.type !== "group") return <>{v.map((x, i) => <span key={i} class="chip">{one(field, x)}</span>)}</>;
  return one(field, v);
}

export const columnLabel = (name: string, f?: FieldView) => (name === "_created" ? t("Created") : name === "_modified" ? t("Modified") : f?.label ?? name);

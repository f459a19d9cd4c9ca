/** A slug from text: lowercase letters and digits joined by "-", accents dropped. */
export function slugify(text: string): string {
  return text.normalize("NFKD").replace(/[\u0300-\u036f]/g, "").toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, "-").replace(/^-+|-+$/g, "");
}

/** The slug a record's sources give, per language for translated sources. */
export function slugFrom(sources: string[], model: Record<string, unknown>, language?: string): string {
  const parts = sources.map((s) => {
    const v = model[s.trim()];
    if (v && typeof v === "object" && !Array.isArray(v)) return language ? String((v as Record<string, unknown>)[language] ?? "") : "";
    return v === null || v === undefined ? "" : String(v);
  });
  return slugify(parts.filter(Boolean).join(" "));
}

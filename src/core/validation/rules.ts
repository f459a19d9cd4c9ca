/** The `validate` rule catalogue (the spec names only natural-short-text; see README). */
export const RULES: Record<string, (v: unknown) => string | null> = {
  /** One line of at most 200 characters, no control characters or markup, at least one letter or digit. */
  "natural-short-text": (v) => {
    if (v === null || v === undefined || v === "") return null;
    if (typeof v !== "string") return "must be text";
    if (v.length > 200) return "must be at most 200 characters";
    if (/[\u0000-\u001f\u007f]/.test(v)) return "must be one line without control characters";
    if (/<[a-zA-Z/!]/.test(v)) return "must not contain markup";
    if (!/[\p{L}\p{N}]/u.test(v)) return "must contain a letter or a digit";
    return null;
  },
};

export const ruleNames = (spec: string | string[]) => (Array.isArray(spec) ? spec : spec.split(",")).map((s) => s.trim()).filter(Boolean);

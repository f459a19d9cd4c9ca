/**
 * Text must be valid Unicode on every store. A JSON escape such as `"\ud800"` parses to a lone
 * UTF-16 surrogate, which no UTF-8 encoding can hold: PostgreSQL's json type refuses it (a 500 on
 * write) while SQLite keeps it. resd refuses it everywhere, as invalid data naming where it was,
 * rather than store something that one store keeps and the other cannot.
 */

export const UNPAIRED_SURROGATE = "holds an unpaired UTF-16 surrogate (such as \\ud800): text must be valid Unicode";

/**
 * The path (`title`, `sections[2].body`, `intro.de`) of the first key or string holding an unpaired
 * surrogate, or null when every text is well-formed. Keys are checked too: they become JSON keys.
 */
export function unpairedSurrogateAt(value: unknown, path = ""): string | null {
  if (typeof value === "string") return value.isWellFormed() ? null : path;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const hit = unpairedSurrogateAt(value[i], `${path}[${i}]`);
      if (hit !== null) return hit;
    }
    return null;
  }
  if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      const at = path ? `${path}.${k}` : k;
      if (!k.isWellFormed()) return path ? `${path}.${k.toWellFormed()}` : k.toWellFormed();
      const hit = unpairedSurrogateAt(v, at);
      if (hit !== null) return hit;
    }
  }
  return null;
}

/**
 * Whether a JSON text may hold an unpaired surrogate: only an escape of the surrogate range can
 * produce one (raw bytes are decoded as UTF-8, where an invalid sequence becomes U+FFFD). Lets the
 * common body skip the walk.
 */
export const mayHoldSurrogateEscape = (text: string) => /\\u[dD][89abcdefABCDEF]/.test(text);

/**
 * A memo of read answers bounded by bytes, not entries: a key is a SHA-256 digest of the query
 * (a 12 KB search must not be held once per cached answer), and the oldest-used entries go once
 * the estimated size of keys and values passes the budget.
 */
const ENTRY_OVERHEAD = 160;

export class BoundedMemo {
  private readonly entries = new Map<string, { value: unknown; bytes: number }>();
  private used = 0;

  constructor(readonly maxBytes: number) {}

  /** The digest that stands for a query's text in the memo. */
  static key(...parts: string[]): string {
    const h = new Bun.CryptoHasher("sha256");
    for (const p of parts) h.update(p).update("\0");
    return h.digest("base64");
  }

  get<T>(key: string): T | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    // Most recently used last: Map keeps insertion order, so eviction takes from the front.
    this.entries.delete(key);
    this.entries.set(key, e);
    return e.value as T;
  }

  /** Keeps `value` unless it alone would take more than an eighth of the budget. */
  set(key: string, value: unknown, valueBytes: number): void {
    const bytes = valueBytes + key.length * 2 + ENTRY_OVERHEAD;
    if (bytes > this.maxBytes / 8) return;
    const old = this.entries.get(key);
    if (old) {
      this.used -= old.bytes;
      this.entries.delete(key);
    }
    for (const [k, e] of this.entries) {
      if (this.used + bytes <= this.maxBytes) break;
      this.entries.delete(k);
      this.used -= e.bytes;
    }
    this.entries.set(key, { value, bytes });
    this.used += bytes;
  }

  clear(): void {
    this.entries.clear();
    this.used = 0;
  }

  /** Estimated bytes held (keys, values and bookkeeping). */
  get bytes(): number {
    return this.used;
  }

  get size(): number {
    return this.entries.size;
  }
}

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

/** Answers valid until anything commits: when `version()` changes, every answer goes at once. */
export class CommitMemo {
  private readonly memo: BoundedMemo;
  private memoVersion = -1;
  /** Misses being computed, shared by requests that ask the same meanwhile. */
  private readonly inflight = new Map<string, { version: number; value: Promise<unknown> }>();

  constructor(maxBytes: number, private readonly version: () => number) {
    this.memo = new BoundedMemo(maxBytes);
  }

  /**
   * A memo of one answer, computed on a miss (once, however many ask meanwhile); `size` estimates
   * the bytes it holds, or null when it is not worth keeping. Every answer is dropped once anything
   * commits, and an answer computed across a commit is not kept.
   */
  async remember<T>(key: string, compute: () => Promise<T>, size: (v: T) => number | null = () => 16): Promise<T> {
    const version = this.version();
    if (version !== this.memoVersion) {
      this.memo.clear();
      this.inflight.clear();
      this.memoVersion = version;
    }
    const hit = this.memo.get<T>(key);
    if (hit !== undefined) return hit;
    const running = this.inflight.get(key);
    if (running && running.version === version) return running.value as Promise<T>;
    const value = compute();
    this.inflight.set(key, { version, value });
    try {
      const v = await value;
      const bytes = size(v);
      if (bytes !== null && this.version() === version && this.memoVersion === version) this.memo.set(key, v, bytes);
      return v;
    } finally {
      if (this.inflight.get(key)?.value === value) this.inflight.delete(key);
    }
  }

  /** Estimated bytes held now. */
  get bytes(): number {
    return this.memo.bytes;
  }
}

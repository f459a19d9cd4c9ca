/**
 * The pages of a site in URL order, searchable as the user types. Entries live in blocks of about a
 * thousand; each block keeps its entries' lower-cased URL and title joined into one string, so a
 * search is one `indexOf` per match over a few strings rather than a call per entry (100,000
 * entries: 0.5–8 ms a term, against 20–90 ms for `includes` on each entry's own text). A change
 * touches one block: its text is joined again at the next search.
 */

export type PageKind = "route" | "endpoint" | "record";

export type PageEntry = {
  id: string;
  url: string;
  kind: PageKind;
  /** The record's resource (record pages only). */
  resource: string | null;
  /** URL, then kind (route, endpoint, record), then resource, uuid and language: unique, and in URL order. */
  key: string;
  /** Lower-cased URL and title, as searched. */
  hay: string;
  /** The entry before it in URL order has the same URL (kept by SortedPages): only then is a URL compared. */
  dup?: boolean;
  /** The entry as the API shows it. */
  view: Record<string, unknown>;
};

const RANK: Record<PageKind, string> = { route: "0", endpoint: "1", record: "2" };

export function entryKey(url: string, kind: PageKind, ...rest: (string | null)[]): string {
  return [url, RANK[kind], ...rest.map((r) => r ?? "")].join("\u0000");
}

/** Between URL and title, and between entries, in a block's text: characters no search term holds. */
const FIELD = "\u0001";
const ENTRY = "\u0000";

export const hayOf = (url: string, title: string | null) => `${url}${FIELD}${title ?? ""}`.toLowerCase();

/** Control characters cannot match (they separate fields); a term is searched lower-cased. */
export const searchTerm = (raw: string) => raw.replace(/[\u0000-\u001f]/g, "").toLowerCase();

const BLOCK = 1024;

class Block {
  text: string | null = null;
  starts: Int32Array | null = null;
  constructor(public entries: PageEntry[]) {}

  get last(): string {
    return this.entries[this.entries.length - 1].key;
  }

  changed() {
    this.text = null;
    this.starts = null;
  }

  joined(): { text: string; starts: Int32Array } {
    if (this.text === null || this.starts === null) {
      const starts = new Int32Array(this.entries.length + 1);
      const parts: string[] = [];
      let at = 0;
      this.entries.forEach((e, i) => {
        starts[i] = at;
        parts.push(e.hay);
        at += e.hay.length + 1;
      });
      starts[this.entries.length] = at;
      this.text = parts.join(ENTRY) + ENTRY;
      this.starts = starts;
    }
    return { text: this.text, starts: this.starts };
  }
}

function indexIn(entries: PageEntry[], key: string): number {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (entries[mid].key < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class SortedPages {
  private blocks: Block[] = [];
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** The block a key belongs in: the first whose last key is not below it, else the last. */
  private blockFor(key: string): number {
    let lo = 0;
    let hi = this.blocks.length - 1;
    if (hi < 0) return -1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.blocks[mid].last < key) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The entries before and after position i of block b (across block ends). */
  private neighbours(b: number, i: number): [PageEntry | undefined, PageEntry | undefined] {
    const entries = this.blocks[b]?.entries ?? [];
    const prev = i > 0 ? entries[i - 1] : this.blocks[b - 1]?.entries.at(-1);
    const next = i < entries.length ? entries[i] : this.blocks[b + 1]?.entries[0];
    return [prev, next];
  }

  add(e: PageEntry): void {
    const b = this.blockFor(e.key);
    if (b < 0) {
      e.dup = false;
      this.blocks.push(new Block([e]));
      this.count++;
      return;
    }
    const block = this.blocks[b];
    const i = indexIn(block.entries, e.key);
    const same = block.entries[i]?.key === e.key;
    const [prev] = this.neighbours(b, i);
    e.dup = prev?.url === e.url;
    if (same) block.entries[i] = e;
    else {
      block.entries.splice(i, 0, e);
      this.count++;
      const [, next] = this.neighbours(b, i + 1);
      if (next) next.dup = next.url === e.url;
    }
    block.changed();
    if (block.entries.length > 2 * BLOCK) this.blocks.splice(b, 1, new Block(block.entries.slice(0, BLOCK)), new Block(block.entries.slice(BLOCK)));
  }

  remove(key: string): boolean {
    const b = this.blockFor(key);
    if (b < 0) return false;
    const block = this.blocks[b];
    const i = indexIn(block.entries, key);
    if (block.entries[i]?.key !== key) return false;
    block.entries.splice(i, 1);
    this.count--;
    const [prev, next] = this.neighbours(b, i);
    if (next) next.dup = prev?.url === next.url;
    if (block.entries.length === 0) this.blocks.splice(b, 1);
    else block.changed();
    return true;
  }

  get(key: string): PageEntry | undefined {
    const b = this.blockFor(key);
    if (b < 0) return undefined;
    const found = this.blocks[b].entries[indexIn(this.blocks[b].entries, key)];
    return found?.key === key ? found : undefined;
  }

  /** Drops the entries `drop` picks and adds `add`, rebuilding the blocks at once (a resource built anew). */
  replaceAll(drop: (e: PageEntry) => boolean, add: PageEntry[]): void {
    const kept: PageEntry[] = [];
    for (const b of this.blocks) for (const e of b.entries) if (!drop(e)) kept.push(e);
    const added = [...add].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    // Both lists are in order: merged, equal keys keep the added entry.
    const all: PageEntry[] = [];
    let i = 0;
    let j = 0;
    while (i < kept.length || j < added.length) {
      if (j >= added.length || (i < kept.length && kept[i].key < added[j].key)) all.push(kept[i++]);
      else {
        if (i < kept.length && kept[i].key === added[j].key) i++;
        if (all.length && all[all.length - 1].key === added[j].key) all[all.length - 1] = added[j++];
        else all.push(added[j++]);
      }
    }
    for (let k = 0; k < all.length; k++) all[k].dup = k > 0 && all[k - 1].url === all[k].url;
    this.blocks = [];
    for (let k = 0; k < all.length; k += BLOCK) this.blocks.push(new Block(all.slice(k, k + BLOCK)));
    this.count = all.length;
  }

  /** Calls `fn` for every entry in order whose URL or title holds `term` (lower-cased; "" for all). */
  each(term: string, fn: (e: PageEntry) => void): void {
    for (const block of this.blocks) {
      if (term === "") {
        for (const e of block.entries) fn(e);
        continue;
      }
      const { text, starts } = block.joined();
      let from = 0;
      let j = 0;
      for (;;) {
        const at = text.indexOf(term, from);
        if (at < 0) break;
        while (starts[j + 1] <= at) j++;
        // A match across the end of an entry holds the separator, which no term holds.
        fn(block.entries[j]);
        from = starts[++j];
      }
    }
  }
}

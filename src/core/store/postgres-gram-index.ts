/**
 * Search on PostgreSQL from kept trigram lists, as SQLite searches (gram-lists.ts).
 *
 * The trigram index (GIN) answers a rare term in about 1.5 ms of the database's time: most of it
 * goes to decoding and intersecting the posting lists of the term's trigrams, which are long for
 * digits ("123" is in 4,000 of 1M "Record number N"). On two cores that held search near 1,000
 * requests a second. Kept in memory as sorted ids, the same intersection takes microseconds, and
 * the database only reads the few candidate rows by primary key and decides each with the term.
 *
 * The lists of a resource are built in one pass over its search texts (a cursor, in the background,
 * one resource at a time): reading one trigram's list through the index costs a heap visit per
 * row (70 ms for 4,000 rows from a cold cache), a pass costs about a microsecond per row. Until the
 * lists are there, and for whatever they cannot answer, the index is asked as before.
 *
 * A list only has to be a superset of the records whose text holds its trigram, since the row-level
 * condition (`ILIKE` of the whole term) decides every candidate:
 * - a create, of this instance or of another told with its rows, adds its rows, each in its place
 *   by id (commits end out of id order); their text is written out in JavaScript where the search
 *   fields are plain strings, otherwise the resource's lists go;
 * - any other write drops the resource's lists, a commit of another instance told of without its
 *   rows drops them all (GramLists' version), and they are built again when searches ask, at most
 *   every REBUILD_MS (longer after a build that was of no use);
 * - creates revised while a build reads are added to what it read unless its snapshot saw them;
 *   any other write of the resource meanwhile, and any commit told of without its rows, leaves the
 *   build unkept.
 *
 * Text is folded one character at a time to the lower case of its first letter (`K` KELVIN SIGN
 * to `k`, `İ` to `i`), as PostgreSQL's ILIKE folds with libc. Other databases use the index only
 * (`usable`, decided by the store at start): ICU may lower one letter to several, and a Turkic
 * ctype lowers `I` to a dotless `ı`.
 *
 * A server builds the lists of its large resources at start (`warm`), so that the first searches
 * after a deploy do not pay for the pass.
 */
import { asciiTrigrams, intersect, LIST_OVERHEAD, type GramLists } from "./gram-lists";
import type { ResourceWrite } from "./memo";
import type { AddedRow } from "./postgres-revise";
import { ended, parseSnapshot } from "./postgres-own";

/** A trigram held by more records than this gets no list (it narrows little; GramLists' SQLite bound). */
export const LISTED_TRIGRAM = 20_000;
/** More candidates than this are left to the index (reading them by id would cost more). */
const FEW_CANDIDATES = 2000;
/** A resource's lists are built again at most this often after they went. */
const REBUILD_MS = 30_000;
/** After a build that could not be kept (a commit ran across it, or it outgrew the budget), the wait doubles up to this. */
const MAX_REBUILD_MS = 10 * 60_000;

/** One record's id and search text (the dialect's expression), and the snapshot it was read in. */
export type TextRow = { id: number; t: string; s: string };

const ASCII_ONLY = /^[\x00-\x7f]*$/;
const folded = new Map<string, string>();

/** `text` lowered a character at a time, ASCII as ASCII (see the header). */
export function foldForSearch(text: string): string {
  if (ASCII_ONLY.test(text)) return text.toLowerCase();
  let out = "";
  for (const ch of text) {
    if (ch.charCodeAt(0) < 0x80) {
      out += ch.toLowerCase();
      continue;
    }
    let f = folded.get(ch);
    if (f === undefined) {
      f = Array.from(ch.toLowerCase())[0] ?? ch;
      if (folded.size < 4096) folded.set(ch, f);
    }
    out += f;
  }
  return out;
}

/** A list being built: ids ascending in a growing array, or null once the trigram is too common. */
type Building = { ids: Int32Array; n: number } | null;

/** What a build gave: its lists kept (maybe none: every trigram common), no row to read, or nothing kept. */
type Built = "kept" | "empty" | "none";
/** A resource without records is looked at again this soon (reading none costs one round trip). */
const EMPTY_MS = 1000;
/** A server builds the lists of resources this large at start (a build of 1M short texts takes ~3 s). */
export const WARM_ROWS = 10_000;

export class PgGramIndex {
  private building: string | null = null;
  private running: Promise<void> | null = null;
  private closed = false;
  /**
   * Commits of this instance to the resource being built, revised while the pass ran (there were
   * no lists to revise): their transaction ids and created rows, or null for any other write.
   */
  private meanwhile: { xid: number; rows: { id: number; text: string }[] | null }[] = [];
  /** Per resource: not before this time, and the wait to the next try. */
  private readonly next = new Map<string, { at: number; wait: number }>();

  /**
   * `read`: the ids and search texts of a resource in id order, in one snapshot; `plainFields`: the
   * search fields of a resource whose text is those fields' strings joined by U+001F (null
   * otherwise); `usable`: false where text is folded otherwise (see the header).
   */
  constructor(
    private readonly lists: GramLists,
    private readonly read: (resource: string) => AsyncIterable<TextRow>,
    private readonly plainFields: (resource: string) => string[] | null,
    private readonly budgetBytes: number,
    private readonly usable: () => boolean,
  ) {}

  /**
   * Ids of the records that may hold `term` (a superset, ascending), or null when the lists cannot
   * tell few enough: none of its trigrams has a list yet (a build is started), or too many match.
   */
  candidates(resource: string, term: string): number[] | null {
    if (!this.usable()) return null;
    const kept: ArrayLike<number>[] = [];
    for (const gram of asciiTrigrams(foldForSearch(term))) {
      const ids = this.lists.get(resource, gram);
      if (ids) kept.push(ids);
    }
    if (!kept.length) {
      // No lists at all (never built, or gone with a write): build them. A resource that has lists
      // but none for this term's trigrams (each common, or in no record) is asked through the index.
      if (!this.lists.holds(resource)) this.build(resource);
      return null;
    }
    const ids = intersect(kept);
    return ids.length <= FEW_CANDIDATES ? ids : null;
  }

  /** After commit `xid` of this instance, revised in order (OwnCommits): creates are added to the lists, anything else drops them. */
  committed(writes: Map<string, ResourceWrite>, added: Map<string, AddedRow[]>, xid: number): void {
    for (const [resource, w] of writes) {
      const above = w === "rewritten" ? null : w.newAbove;
      const building = resource === this.building;
      const held = above !== null && this.lists.holds(resource);
      // Texts are written out once, and only for a resource with lists to append to or being built.
      const texts = above !== null && (building || held) ? this.texts(resource, added.get(resource) ?? []) : null;
      if (building) this.meanwhile.push({ xid, rows: texts });
      const rows = held ? texts : null;
      this.lists.committed(resource, rows ? above : null, () => rows ?? []);
    }
  }

  /** The created rows' folded texts, oldest first; null (the lists go) where JavaScript cannot write the text as PostgreSQL does. */
  private texts(resource: string, rows: AddedRow[]): { id: number; text: string }[] | null {
    const fields = this.plainFields(resource);
    if (!fields) return null;
    const out: { id: number; text: string }[] = [];
    for (const row of [...rows].sort((a, b) => a.id - b.id)) {
      const data = JSON.parse(row.data) as Record<string, unknown>;
      const values = fields.map((f) => data[f]);
      // `data->>'f'` of anything but a string or null is its JSON text: not what is written here.
      if (values.some((v) => v !== undefined && v !== null && typeof v !== "string")) return null;
      out.push({ id: row.id, text: foldForSearch(values.map((v) => v ?? "").join("\u001f")) });
    }
    return out;
  }

  /**
   * A server's start: the lists of each resource holding at least WARM_ROWS records (by the
   * planner's estimate, `rows`) are built one after another, so that the first searches after a
   * start or a deploy do not wait for them.
   */
  async warm(resources: string[], rows: (resource: string) => Promise<number>): Promise<void> {
    for (const resource of resources) {
      if (this.closed || !this.usable() || this.lists.holds(resource) || (await rows(resource)) < WARM_ROWS) continue;
      await this.build(resource);
    }
  }

  /** Stops a build under way (its cursor is closed before the connections are). */
  async close(): Promise<void> {
    this.closed = true;
    await this.running;
  }

  /** Starts building a resource's lists unless one is being built or it is too soon; resolves when it is done. */
  private build(resource: string): Promise<void> | null {
    const next = this.next.get(resource);
    if (this.closed || this.budgetBytes <= 0 || this.building !== null || (next && Date.now() < next.at)) return null;
    this.building = resource;
    this.meanwhile = [];
    const wait = next?.wait ?? REBUILD_MS;
    this.next.set(resource, { at: Date.now() + wait, wait });
    this.running = this.run(resource).then((built) => {
      // A build that could not be kept waits longer before the next (writes keep landing across it,
      // or the texts outgrow the budget); one that found nothing to list, the usual wait.
      const longer = Math.min(wait * 2, MAX_REBUILD_MS);
      if (built === "none") this.next.set(resource, { at: Date.now() + longer, wait: longer });
      else this.next.set(resource, { at: Date.now() + (built === "empty" ? EMPTY_MS : REBUILD_MS), wait: REBUILD_MS });
    }, (e) => {
      // Closing ends the cursor of a build under way: that is no failure to report.
      if (!this.closed) console.error(`building the search lists of ${resource} failed (searches use the trigram index):`, e);
      this.next.set(resource, { at: Date.now() + MAX_REBUILD_MS, wait: MAX_REBUILD_MS });
    }).finally(() => {
      this.building = null;
      this.running = null;
    });
    return this.running;
  }

  /**
   * One pass over the resource's texts. What it holds is counted as GramLists will count it (4
   * bytes an id and each list's overhead, for trigrams too common to list only until they are):
   * past the lists' share of the cache it stops, and the resource is searched through the index.
   */
  private async run(resource: string): Promise<Built> {
    const all = this.lists.allGeneration();
    const grams = new Map<number, Building>();
    let held = 0;
    let last = 0;
    let snapshot: string | null = null;
    const add = (id: number, t: string) => {
      for (let i = 0; i + 3 <= t.length; i++) {
        const a = t.charCodeAt(i), b = t.charCodeAt(i + 1), c = t.charCodeAt(i + 2);
        if ((a | b | c) >= 0x80) continue;
        const code = (a << 14) | (b << 7) | c;
        let list = grams.get(code);
        if (list === undefined) {
          grams.set(code, (list = { ids: new Int32Array(8), n: 0 }));
          held += LIST_OVERHEAD;
        }
        if (list === null || (list.n > 0 && list.ids[list.n - 1] === id)) continue;
        if (list.n === LISTED_TRIGRAM) {
          // Too common to narrow a search: its ids go (the entry stays, so it is not listed again).
          held -= list.n * 4 + LIST_OVERHEAD;
          grams.set(code, null);
          continue;
        }
        if (list.n === list.ids.length) {
          const grown = new Int32Array(list.ids.length * 2);
          grown.set(list.ids);
          list.ids = grown;
        }
        list.ids[list.n++] = id;
        held += 4;
      }
    };
    for await (const row of this.read(resource)) {
      if (this.closed) return "none";
      snapshot ??= row.s;
      if (row.id > 0x7fffffff) return "none";
      last = row.id;
      add(row.id, foldForSearch(row.t));
      if (held > this.budgetBytes) return "none";
    }
    // Creates revised while the pass ran found no lists to be added to: those
    // its snapshot did not see are added now, in id order (the lists stay sorted). Any other write
    // of the resource meanwhile leaves the pass unkept.
    const seen = snapshot === null ? null : parseSnapshot(snapshot);
    const missed: { id: number; text: string }[] = [];
    for (const c of this.meanwhile) {
      if (c.rows === null) return "none";
      if (seen === null || !ended(seen, c.xid)) missed.push(...c.rows);
    }
    missed.sort((a, b) => a.id - b.id);
    if (missed.length && missed[missed.length - 1]!.id > 0x7fffffff) return "none";
    // Rows above what the pass read are added in order; those below (a transaction that held its
    // ids across the pass's start) go into their places once the lists are kept.
    const below = missed.filter((r) => r.id <= last);
    for (const r of missed) if (r.id > last) add(r.id, r.text);
    if (held > this.budgetBytes) return "none";
    for (const [code, list] of grams) {
      if (list && !this.lists.putSettled(resource, String.fromCharCode(code >> 14, (code >> 7) & 0x7f, code & 0x7f), list.ids.subarray(0, list.n), all)) return "none";
    }
    if (below.length) this.lists.committed(resource, below[0]!.id - 1, () => below);
    return snapshot === null ? "empty" : "kept";
  }
}

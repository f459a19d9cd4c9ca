/**
 * Search on SQLite: which rows the page of a search term reads (planSearch: candidates from the
 * term's rarest trigrams, or a scan in order), and the total of a term found by the index's text
 * alone (countText). Record counts per trigram are kept a while (they only steer); lists of row ids
 * per trigram are kept in GramLists until a commit changes them.
 */
import type { CompiledQuery } from "./types";
import { BoundedMemo, type CommitMemo } from "./memo";
import { intersect, type GramLists } from "./gram-lists";
import { searchTable, searchTextTable } from "./sqlite-schema";
import type { SqliteReadRoute } from "./sqlite-read-route";
import type { SqliteCounts } from "./sqlite-counts";

/** A trigram held by at most this many records makes a search cheap enough to run without a worker (~0.3 ms). */
const RARE_TRIGRAM = 5000;
/** A trigram held by more records than this is not read into a kept list (see GramLists). */
const LISTED_TRIGRAM = 20_000;
/** Trigrams of one search term whose record counts are looked at. */
const MAX_GRAMS = 16;
/** Candidates few enough to read their rows without a worker. */
const FEW_CANDIDATES = 2000;
/** A search whose candidates exceed this is "common": its pages are read by scanning in order. */
const COMMON_TERM = 2000;
/** A rarest trigram held by more records than this makes a term common without asking the index. */
const MAX_CANDIDATES = 50_000;
/** How long a trigram's record count is trusted for choosing a search plan (it only steers). */
const GRAM_TTL_MS = 60_000;

/** The trigrams of a term as the index cuts text: three characters (code points) each. */
function trigrams(term: string): string[] {
  const chars = Array.from(term);
  const out: string[] = [];
  for (let i = 0; i + 3 <= chars.length; i++) out.push(chars.slice(i, i + 3).join(""));
  return out;
}

export class SqliteSearch {
  /**
   * `memo`: the store's cached answers (candidates of a term are kept there too); `gramLists`: row
   * ids per trigram; `marks`: whether a commit landed while a total was counted in parts.
   */
  constructor(
    private readonly route: Pick<SqliteReadRoute, "warm" | "readPool" | "readAll" | "readGet" | "workers">,
    private readonly memo: Pick<CommitMemo, "remember">,
    private readonly gramLists: GramLists,
    private readonly marks: Pick<SqliteCounts, "commitMark">,
  ) {}

  /**
   * Search through the index without its slow path. The trigram index's own LIKE intersects the
   * doclists of every trigram of the term, some of which hold most records ("num" of "number 42");
   * instead the rarest trigrams (their record counts are read once from the index's vocabulary and
   * kept) give a small set of candidates, and the row-level condition decides. A term whose rarest
   * trigram is common, or a term shorter than a trigram, is answered by scanning the rows in order
   * (a page of a common term fills at once; its total is counted off the event loop and kept until
   * the next commit).
   */
  async planSearch(q: CompiledQuery, counting = false): Promise<CompiledQuery> {
    if (!q.search) return q;
    const { resource, term, scan } = q.search;
    const asScan = { ...q, where: scan.where, args: scan.args, search: undefined };
    const grams = [...new Set(trigrams(term))];
    if (!grams.length) return asScan;
    const ascii = grams.filter((g) => /^[\x20-\x7e]{3}$/.test(g));
    // Each uncached trigram costs a bounded count (up to 3 ms): a long term is judged by an even
    // spread of at most MAX_GRAMS of them, so no search holds the event loop for long.
    const judged = ascii.length <= MAX_GRAMS ? ascii : Array.from({ length: MAX_GRAMS }, (_, i) => ascii[Math.floor((i * ascii.length) / MAX_GRAMS)]);
    const known = judged.map((g) => ({ g, docs: this.gramDocs(resource, g.toLowerCase()) }));
    known.sort((a, b) => a.docs - b.docs);
    if (known.length && known[0].docs > MAX_CANDIDATES) return asScan;
    const picked = (known.length ? known.map((k) => k.g) : grams).slice(0, 3);
    const match = picked.map((g) => `"${g.replace(/"/g, '""')}"`).join(" AND ");
    // A rare trigram bounds every step to a few rows: handing them to a worker and back would cost
    // more than running them (three worker round trips made a search for one record 8 ms).
    const rare = known.length > 0 && known[0].docs <= RARE_TRIGRAM;
    const rest = scan.where.replace(/^WHERE /, "");
    // A total asks the index inside its own counting statement, so it is of one state (candidates
    // kept from another worker call may be from before a commit that landed since). It needs no
    // candidate list: the rarest trigram bounds their number.
    if (counting) {
      const where = `WHERE id IN (SELECT rowid FROM ${searchTable(resource)} WHERE ${searchTable(resource)} MATCH ?) AND ${rest}`;
      return { ...q, where, args: [match, ...scan.args], search: undefined, small: known.length > 0 && known[0].docs <= FEW_CANDIDATES };
    }
    // Any of a term's trigrams bounds its candidates, so lists too long to keep are left out of the
    // intersection rather than read (the row-level condition decides either way).
    const listed = known.filter((k) => k.docs <= LISTED_TRIGRAM).slice(0, 3);
    const ids = listed.length ? await this.gramCandidates(resource, listed, q.caller)
      : await this.memo.remember(BoundedMemo.key("candidates", resource, match),
        async () => (await this.route.readAll<{ id: number }>(`SELECT rowid AS id FROM ${searchTable(resource)} WHERE ${searchTable(resource)} MATCH ?`, [match], rare, { caller: q.caller })).map((r) => r.id),
        (v) => v.length * 16, () => ({ kind: "any", resource }));
    // Most records match: a page is read in order faster than sorting every candidate.
    if (ids.length > COMMON_TERM && q.limit !== null && q.offset < COMMON_TERM) return asScan;
    return { ...q, where: `WHERE id IN (SELECT value FROM json_each(?)) AND ${rest}`, args: [JSON.stringify(ids), ...scan.args], search: undefined, small: ids.length <= FEW_CANDIDATES };
  }

  /** Records holding every one of a term's rarest ASCII trigrams: the intersection of their kept lists. */
  private async gramCandidates(resource: string, picked: { g: string; docs: number }[], caller?: string): Promise<number[]> {
    return intersect(await Promise.all(picked.map(({ g, docs }) => this.gramList(resource, g.toLowerCase(), docs, caller))));
  }

  /** The ids of records whose search text holds `gram`, ascending; read from the index once, then kept (see GramLists). */
  private async gramList(resource: string, gram: string, docs: number, caller?: string): Promise<ArrayLike<number>> {
    const kept = this.gramLists.get(resource, gram);
    if (kept) return kept;
    const gen = this.gramLists.generation(resource);
    const fts = searchTable(resource);
    // One JSON text crosses from a worker (and out of SQLite) for less than thousands of row objects.
    const [row] = await this.route.readAll<{ ids: string }>(`SELECT json_group_array(id) AS ids FROM (SELECT rowid AS id FROM ${fts} WHERE ${fts} MATCH ? ORDER BY rowid)`, [`"${gram.replace(/"/g, '""')}"`], docs <= RARE_TRIGRAM, { caller });
    const ids = JSON.parse(row!.ids) as number[];
    return this.gramLists.put(resource, gram, ids, gen) ?? ids;
  }

  /** Records whose search text holds a trigram (at most MAX_CANDIDATES + 1); kept a while (it only steers). */
  private readonly gramCache = new Map<string, { docs: number; at: number }>();
  private gramDocs(resource: string, gram: string): number {
    const list = this.gramLists.get(resource, gram);
    if (list) return list.length;
    const key = `${resource}\0${gram}`;
    const hit = this.gramCache.get(key);
    if (hit && performance.now() - hit.at < GRAM_TTL_MS) return hit.docs;
    // Counted in the index, up to one past the most candidates a search reads: bounded work (0.3 ms
    // for a rare trigram, 3 ms for one in every record), where the index's vocabulary table scanned
    // all its terms for each lookup (19 ms on 1M records).
    const fts = searchTable(resource);
    const docs = (this.route.warm().query(`SELECT count(*) AS n FROM (SELECT 1 FROM ${fts} WHERE ${fts} MATCH ? LIMIT ?)`).get(`"${gram.replace(/"/g, '""')}"`, MAX_CANDIDATES + 1) as { n: number }).n;
    if (this.gramCache.size > 10_000) this.gramCache.clear();
    this.gramCache.set(key, { docs, at: performance.now() });
    return docs;
  }
  /**
   * Records whose search text holds `term`, by a scan of the index's text instead of the records
   * (the text is kept in the records' own transactions; a term holds no LIKE wildcard, escape or
   * value separator, so a match in the joined text is a match in one value, as the row-level
   * search decides). The read workers each count a part of the row ids at once; should a commit
   * land meanwhile, the parts may come from different states, so the count is taken again in one
   * query instead.
   */
  async countText(resource: string, term: string, caller?: string): Promise<number> {
    const sql = `SELECT count(*) AS n FROM ${searchTextTable(resource)} WHERE rowid > ? AND rowid <= ? AND c0 LIKE ? ESCAPE '\\'`;
    const pattern = `%${term}%`;
    const whole = async (admitted = false) => (await this.route.readGet<{ n: number }>(sql, [0, Number.MAX_SAFE_INTEGER, pattern], false, { caller, admitted }))!.n;
    const parts = this.route.readPool() ? this.route.workers : 1;
    if (parts === 1) return whole();
    const top = (this.route.warm().query(`SELECT max(rowid) AS m FROM ${searchTextTable(resource)}`).get() as { m: number | null }).m ?? 0;
    const before = this.marks.commitMark();
    const bounds = Array.from({ length: parts + 1 }, (_, i) => (i === parts ? top : Math.floor((top * i) / parts)));
    // One query for the caller's bound, however many parts it runs in.
    this.route.readPool()?.admit(caller);
    const counts = await Promise.all(bounds.slice(1).map((hi, i) => this.route.readGet<{ n: number }>(sql, [bounds[i], hi, pattern], false, { caller, admitted: true, part: i > 0 })));
    // Past `top` too: rows created since are counted in the one-query answer.
    if (this.marks.commitMark() !== before) return whole(true);
    return counts.reduce((a, r) => a + r!.n, 0);
  }
}

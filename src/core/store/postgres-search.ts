/**
 * Search on PostgreSQL: the trigram index (pg_trgm, GIN) asked for the rarest word of the term.
 *
 * GIN reads the posting list of every trigram of a pattern. For "number 123456" over a million
 * records named "Record number N", the trigrams of "number" are in every record: the index read
 * 1,600 pages (20 ms) to find one row. Asked for "123456" alone it reads 17 (under a millisecond),
 * and the whole term then filters the few rows found (the filter is written so that the planner
 * cannot hand it to the index too). A row holding the term holds each of its words, so the answer
 * is the same; only the work differs. The ids the index finds are taken as an array: left to
 * itself, the planner sometimes read the table in the page's order hoping to fill a page of 20
 * early, which for a rare term is the whole table (10 s).
 *
 * Which word is rarest comes from a sample of the resource's search texts (about 2,000, read
 * through TABLESAMPLE, again every 10 minutes). A word the sample does not hold counts as rarest;
 * among equals the longest wins; a word in more than 1 % of the sample is common. The sample only
 * chooses: a poor sample costs time, never a row.
 */
import type { SQL } from "bun";
import type { PgDialect } from "./postgres-dialect";

/** Texts a sample holds, and how long it stands. */
const SAMPLE_ROWS = 2000;
const SAMPLE_TTL_MS = 10 * 60 * 1000;
/** A word in more than this share of the sample is no better than the whole term. */
const COMMON_SHARE = 0.01;

/** Words whose hits a sample remembers (searches repeat their words; a sample is read again anyway). */
const MAX_WORDS = 10_000;

/** `hits`: per folded word, the texts holding it, counted once per sample. */
type Sample = { texts: string[]; at: number; hits: Map<string, number> };

/** The words of a term that give the index something to look for (three characters or more). */
const wordsOf = (term: string) => term.split(/[^\p{L}\p{N}]+/u).filter((w) => Array.from(w).length >= 3);

function hitsOf(sample: Sample, folded: string): number {
  let hits = sample.hits.get(folded);
  if (hits !== undefined) return hits;
  hits = 0;
  for (const t of sample.texts) if (t.includes(folded)) hits++;
  if (sample.hits.size >= MAX_WORDS) sample.hits.clear();
  sample.hits.set(folded, hits);
  return hits;
}

export class SearchPlanner {
  private readonly samples = new Map<string, Sample>();
  private readonly loading = new Map<string, Promise<void>>();

  /** `sql`: where samples are read; `dialect`: a resource's table and the expression of its search text. */
  constructor(private readonly sql: SQL, private readonly dialect: PgDialect) {}

  /**
   * The word of `term` (or the whole term, when it is one word) the index should be asked for, or
   * null when it is common: a common word is better found by reading the table in the page's order
   * until the page is full. The first search of a resource waits for its sample (a few dozen pages).
   */
  async narrowest(resource: string, term: string): Promise<string | null> {
    const words = wordsOf(term);
    if (words.length === 0) return null;
    const sample = this.samples.get(resource) ?? (await this.sample(resource), this.samples.get(resource));
    if (!sample) return null;
    void this.sample(resource);
    let best: string | null = null;
    let bestHits = Infinity;
    for (const w of [...words].sort((a, b) => b.length - a.length)) {
      const hits = hitsOf(sample, w.toLowerCase());
      if (hits < bestHits) [best, bestHits] = [w, hits];
    }
    if (!sample.texts.length || bestHits / sample.texts.length > COMMON_SHARE) return null;
    return words.length === 1 && best === term ? term : best;
  }

  /** Reads a sample when there is none or it is old (once at a time); resolves when that is done. */
  private sample(resource: string): Promise<void> {
    const s = this.samples.get(resource);
    if (s && Date.now() - s.at <= SAMPLE_TTL_MS) return Promise.resolve();
    let load = this.loading.get(resource);
    if (!load) {
      load = this.load(resource)
        .catch((e) => console.error(`sampling the search texts of ${resource} failed (searches still answer, perhaps slower):`, e))
        .finally(() => this.loading.delete(resource));
      this.loading.set(resource, load);
    }
    return load;
  }

  private async load(resource: string): Promise<void> {
    const table = this.dialect.table(resource);
    const est = ((await this.sql.unsafe("SELECT reltuples::float8 AS n FROM pg_class WHERE oid = $1::regclass", [table])) as { n: number }[])[0]?.n ?? 0;
    const share = est > SAMPLE_ROWS ? Math.max(0.01, (100 * SAMPLE_ROWS) / est) : 100;
    const rows = (await this.sql.unsafe(`SELECT lower(${this.dialect.searchText.get(resource) ?? "''"}) AS t FROM ${table} TABLESAMPLE SYSTEM (${share.toFixed(4)}) LIMIT ${SAMPLE_ROWS * 2}`)) as { t: string }[];
    this.samples.set(resource, { texts: rows.map((r) => r.t), at: Date.now(), hits: new Map() });
  }
}

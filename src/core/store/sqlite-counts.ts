/**
 * Maintained totals on SQLite, as the store reads them: the write transaction keeps `_resd_counts`
 * (flushCounts in sqlite-schema.ts), so the total of an unfiltered list or of an equality filter on
 * a counted field is one lookup, exact under any write load. Totals read since the last commit are
 * kept here: a page of a counted filter asks one for its total and one to know where the list ends,
 * on every request.
 */
import type { CommitMemo } from "./memo";
import type { SqliteReadRoute } from "./sqlite-read-route";

export class SqliteCounts {
  /** Resources whose maintained counts exist (the schema sync records them in _resd_derived). */
  private readonly countsReady = new Set<string>();
  /** Maintained totals read since the last commit of this process or another. */
  private readonly countsSeen = new Map<string, number>();
  private countsAt = "";

  /** `memo` counts this process's commits; `version` changes with another process's (data_version). */
  constructor(private readonly route: Pick<SqliteReadRoute, "warm">, private readonly memo: Pick<CommitMemo, "commits">, private readonly version: () => number) {}

  countedReady(resource: string): boolean {
    if (this.countsReady.has(resource)) return true;
    const ok = this.route.warm().query("SELECT 1 FROM _resd_derived WHERE resource = ? AND kind = 'counts'").get(resource) !== null;
    if (ok) this.countsReady.add(resource);
    return ok;
  }

  /** Changes with every commit, of this process (the memo counts them) or another (data_version). */
  commitMark(): string {
    return `${this.memo.commits}:${this.version()}`;
  }

  maintainedCount(resource: string, c: { keys: string[]; negate: boolean }): number {
    const at = this.commitMark();
    if (at !== this.countsAt) {
      this.countsSeen.clear();
      this.countsAt = at;
    }
    const key = `${resource}\u0000${c.negate}\u0000${c.keys.join("\u0000")}`;
    const seen = this.countsSeen.get(key);
    if (seen !== undefined) return seen;
    const keys = c.negate ? ["", ...c.keys] : c.keys;
    const rows = this.route.warm().query(`SELECT key, n FROM _resd_counts WHERE resource = ? AND key IN (${keys.map(() => "?").join(", ")})`)
      .all(resource, ...keys) as { key: string; n: number }[];
    const sum = rows.filter((r) => r.key !== "").reduce((a, r) => a + r.n, 0);
    const n = c.negate ? (rows.find((r) => r.key === "")?.n ?? 0) - sum : sum;
    if (this.countsSeen.size < 1000) this.countsSeen.set(key, n);
    return n;
  }
}

/**
 * Shared parts of the realtime bench (bench/realtime): a latency histogram that several processes
 * can merge, the clock both sides use, and reading a process's memory and CPU from /proc.
 */
import { readFileSync } from "node:fs";

/** Wall-clock milliseconds with sub-millisecond precision (the same clock in every process here). */
export const now = () => performance.timeOrigin + performance.now();

/** 0.1 ms buckets up to 10 s; above that only the count and the max are kept. */
export const BUCKET_MS = 0.1;
export const BUCKETS = 100_000;

export class Histogram {
  counts = new Uint32Array(BUCKETS);
  over = 0;
  below = 0;
  n = 0;
  max = Number.NEGATIVE_INFINITY;
  min = Number.POSITIVE_INFINITY;
  add(ms: number): void {
    this.n++;
    if (ms > this.max) this.max = ms;
    if (ms < this.min) this.min = ms;
    if (ms < 0) this.below++; // a clock step between processes; counted in bucket 0
    const b = Math.max(0, Math.floor(ms / BUCKET_MS));
    if (b >= BUCKETS) this.over++;
    else this.counts[b]++;
  }
  /** Only the buckets in use: what crosses the IPC channel. */
  sparse(): SparseHistogram {
    const buckets: [number, number][] = [];
    for (let i = 0; i < BUCKETS; i++) if (this.counts[i]) buckets.push([i, this.counts[i]]);
    return { buckets, over: this.over, below: this.below, n: this.n, max: this.max, min: this.min };
  }
  merge(s: SparseHistogram): void {
    for (const [i, c] of s.buckets) this.counts[i] += c;
    this.over += s.over;
    this.below += s.below;
    this.n += s.n;
    if (s.n && s.max > this.max) this.max = s.max;
    if (s.n && s.min < this.min) this.min = s.min;
  }
  /** The q-quantile (0..1), to the bucket's upper edge; the max when it lies above 10 s. */
  quantile(q: number): number {
    if (!this.n) return Number.NaN;
    const want = Math.ceil(q * this.n);
    let seen = 0;
    for (let i = 0; i < BUCKETS; i++) {
      seen += this.counts[i];
      if (seen >= want) return (i + 1) * BUCKET_MS;
    }
    return this.max;
  }
}
export type SparseHistogram = { buckets: [number, number][]; over: number; below: number; n: number; max: number; min: number };

/** Quantile of plain samples (sorted in place). */
export function pct(xs: number[], q: number): number {
  if (!xs.length) return Number.NaN;
  xs.sort((a, b) => a - b);
  return xs[Math.min(xs.length - 1, Math.max(0, Math.ceil(q * xs.length) - 1))];
}

/** VmRSS of a process in MB (NaN once it is gone). */
export function rssMB(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** CPU seconds in user and in system mode a process (all its threads) used so far (NaN once it is gone). */
export function cpuSplit(pid: number): { user: number; sys: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // fields[0] is field 3 (state); utime and stime are fields 14 and 15, in clock ticks (100/s).
    return { user: Number(fields[11]) / 100, sys: Number(fields[12]) / 100 };
  } catch {
    return { user: Number.NaN, sys: Number.NaN };
  }
}
export const cpuSeconds = (pid: number) => {
  const c = cpuSplit(pid);
  return c.user + c.sys;
};

export const f = (x: number, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : "n/a");

/**
 * Copies a site's database into another, empty store (`resd migrate --to`): SQLite to PostgreSQL or
 * back. Records of every resource (users and roles included) keep their uuids, times and authors;
 * history keeps its order; unfinished jobs are queued again. Everything is written in one
 * transaction of the target and, before it commits, read back there and compared with the source
 * record by record (count and SHA-256 of every stored column): a failure or a difference leaves the
 * target with nothing of it. The source is only read.
 */
import { AppError } from "../errors";
import type { ResourceDef } from "../definitions/types";
import type { HistoryEntry, Store, StoredRecord, StoreTx } from "./types";

export type StoreMoveProgress = { resource: string; done: number; total: number };
export type StoreMoveStats = {
  resources: { name: string; records: number }[];
  records: number;
  history: number;
  jobs: number;
  /** Dead jobs stay behind (they are kept for inspection, not for running). */
  deadJobsLeft: number;
};

const EVERYTHING = { where: "", args: [] };
/** The built-in admin role: made by any resd that opened the target before; the copy replaces it. */
const BUILT_IN = { resource: "roles", uuid: "admin" };

const recordLine = (r: StoredRecord) => JSON.stringify([r.uuid, r.data, r._created, r._modified, r._created_by, r._modified_by]);
const historyLine = (h: HistoryEntry) => JSON.stringify([h.resource, h.uuid, h.action, h.at, h.user, h.data, h._created, h.via ?? null]);

/** Count and digest of a sequence of lines, read as a stream. */
async function digest<T>(rows: AsyncIterable<T>, line: (row: T) => string): Promise<{ n: number; sha: string }> {
  const h = new Bun.CryptoHasher("sha256");
  let n = 0;
  for await (const row of rows) {
    h.update(line(row));
    h.update("\n");
    n++;
  }
  return { n, sha: h.digest("hex") };
}

/** The copy must start from nothing (the caller looked before opening the target; this holds against a race). */
async function checkEmpty(tx: StoreTx, defs: ResourceDef[]): Promise<void> {
  for (const def of defs) {
    for await (const rec of tx.readAll(def.name)) {
      if (def.name === BUILT_IN.resource && rec.uuid === BUILT_IN.uuid) continue;
      throw new AppError(409, "RESOURCE_EXISTS", `the target already holds ${def.name} records; resd migrate --to copies into an empty database only`);
    }
  }
  for await (const _ of tx.readHistory()) throw new AppError(409, "RESOURCE_EXISTS", "the target already holds record history; resd migrate --to copies into an empty database only");
}

/** Records are handed to the target this many at a time. */
const BATCH = 1000;

export async function moveStore(from: Store, to: Store, defsIn: Iterable<ResourceDef>, onProgress?: (p: StoreMoveProgress) => void): Promise<StoreMoveStats> {
  const defs = [...defsIn];
  const refused = (await to.syncSchema(defs)).filter((c) => c.action === "refused");
  if (refused.length) throw new AppError(409, "RESOURCE_EXISTS", `the target's schema is newer than this site's definitions: ${refused.map((c) => c.resource).join(", ")}`);
  const totals = new Map<string, number>();
  for (const def of defs) totals.set(def.name, await from.count(def.name, EVERYTHING));
  const pending = [...(await from.jobs.list({ state: "queued", limit: Number.MAX_SAFE_INTEGER })), ...(await from.jobs.list({ state: "running", limit: Number.MAX_SAFE_INTEGER }))]
    .sort((a, b) => a.id - b.id);
  const deadJobsLeft = (await from.jobs.list({ state: "dead", limit: Number.MAX_SAFE_INTEGER })).length;

  let history = 0;
  // One transaction: the copy, then the comparison of what the target now holds with the source;
  // any failure, or any difference, and the target keeps nothing of it.
  await to.transaction(async (tx) => {
    await checkEmpty(tx, defs);
    if (await tx.get(BUILT_IN.resource, BUILT_IN.uuid)) await tx.delete(BUILT_IN.resource, BUILT_IN.uuid);
    for (const def of defs) {
      const total = totals.get(def.name)!;
      let done = 0;
      let batch: StoredRecord[] = [];
      const flush = async () => {
        await tx.insertMany(def.name, batch);
        done += batch.length;
        batch = [];
        onProgress?.({ resource: def.name, done, total });
      };
      for await (const rec of from.all(def.name)) {
        batch.push(rec);
        if (batch.length === BATCH) await flush();
      }
      await flush();
    }
    for await (const entry of from.allHistory()) {
      const { id: _id, ...rest } = entry;
      await tx.addHistory(rest);
      if (++history % BATCH === 0) onProgress?.({ resource: "history", done: history, total: history });
    }
    // A job that was running when the source stopped runs again (at least once, as after any crash).
    for (const j of pending) await tx.enqueueJob({ type: j.type, resource: j.resource, action: j.action, uuid: j.uuid, payload: j.payload, run_at: j.run_at });
    onProgress?.({ resource: "comparing", done: 0, total: 0 });
    const mismatch = await compare(from, tx, defs);
    if (mismatch) throw new Error(`the copy does not read back the same (${mismatch}); nothing was written to the target, the source was left as it was`);
  }, { alone: true });

  const resources = defs.map((d) => ({ name: d.name, records: totals.get(d.name)! }));
  return { resources, records: resources.reduce((a, r) => a + r.records, 0), history, jobs: pending.length, deadJobsLeft };
}

/** The first difference between the source and what the copy's transaction holds, or null. */
async function compare(from: Store, tx: StoreTx, defs: ResourceDef[]): Promise<string | null> {
  for (const def of defs) {
    const a = await digest(from.all(def.name), recordLine);
    const b = await digest(tx.readAll(def.name), recordLine);
    if (a.n !== b.n) return `${def.name}: ${a.n} records here, ${b.n} there`;
    if (a.sha !== b.sha) return `${def.name}: the records differ`;
  }
  const a = await digest(from.allHistory(), historyLine);
  const b = await digest(tx.readHistory(), historyLine);
  if (a.n !== b.n) return `history: ${a.n} entries here, ${b.n} there`;
  if (a.sha !== b.sha) return "history: the entries differ";
  return null;
}

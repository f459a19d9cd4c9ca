/**
 * Worker thread that runs an import's read phase (read-phase.ts) for a large file while the
 * importing thread already writes what it spooled: the two phases then use two cores. It reads
 * committed records on a read-only connection of its own.
 *
 * Messages out: `spooled` (more entries are on disk), `progress`, then `done` with the report, or
 * `failed` with the error that stops the import.
 */
import { AppError } from "../errors";
import { openSqliteReads } from "../store/sqlite-reads";
import { readPhase, Report } from "./read-phase";
import { rowsOf } from "./source";
import { Spool } from "./spool";
import type { ReadJob, ReaderMessage } from "./reader";

declare const self: Worker;

/** Entries written between two notices to the writer. */
const NOTICE_EVERY = 1024;

/**
 * The reader runs ahead of the writer, and two heaps collecting at their own pace took the process
 * to ~600 MB on a million rows; a full collection now and then (~20 ms, on this thread) keeps it lower.
 */
const COLLECT_EVERY = 65536;

const send = (m: ReaderMessage) => postMessage(m);

self.onmessage = async (event: MessageEvent<ReadJob>) => {
  const job = event.data;
  const reads = openSqliteReads(job.reads.path);
  const spool = new Spool(job.spool);
  const report = new Report();
  const progress = { bytes: 0, totalBytes: job.size };
  try {
    let noticed = 0;
    const rows = rowsOf(Bun.file(job.file), job.layout, job.def, progress);
    await readPhase(reads, job.def, job.rule, rows, job.layout.format, spool, report,
      () => send({ type: "progress", rows: report.total, bytes: progress.bytes }), job.prep,
      async () => {
        if (spool.count - noticed < NOTICE_EVERY) return;
        noticed = spool.count;
        await spool.flush();
        send({ type: "spooled" });
        if (spool.count % COLLECT_EVERY < NOTICE_EVERY) Bun.gc(true);
      });
    await spool.finish();
    send({ type: "done", report: { total: report.total, errors: report.errors, detail: report.detail }, rows: report.total, bytes: progress.bytes });
  } catch (e) {
    // The error that stopped the reading is the one to report; the spool is removed by the importer.
    await spool.finish().catch(() => undefined);
    send({ type: "failed", error: e instanceof AppError ? { status: e.status, code: e.code, details: e.details, extra: e.extra } : { message: (e as Error)?.message ?? String(e) } });
  } finally {
    reads.close();
  }
};

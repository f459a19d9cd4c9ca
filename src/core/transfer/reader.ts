/**
 * Runs an import's read phase on a worker thread (read-worker.ts) and tells the write phase when
 * more prepared rows are on disk. Used for files large enough to pay for the thread's start.
 */
import { READ_WORKER, workerSpecifier } from "../../build/worker-url";
import type { ResourceDef } from "../definitions/types";
import { AppError, type MessageCode } from "../errors";
import type { PrepareOptions } from "../records/prepare";
import type { DetachedReads } from "../store/types";
import type { MatchRule } from "./match";
import type { ReportData } from "./read-phase";
import type { Layout } from "./source";

/** What the worker is given: everything plain data (structured clone). */
export type ReadJob = { file: string; size: number; layout: Layout; def: ResourceDef; rule: MatchRule; prep: PrepareOptions; reads: DetachedReads; spool: string };

type WireError = { status: number; code: MessageCode; details?: string; extra: AppError["extra"] } | { message: string };
export type ReaderMessage =
  | { type: "spooled" }
  | { type: "progress"; rows: number; bytes: number }
  | { type: "done"; report: ReportData; rows: number; bytes: number }
  | { type: "failed"; error: WireError };

/** What the write phase waits on while rows are still being read. */
export interface Feed {
  /**
   * Resolves true when more entries may be on disk, false once reading has ended (every entry is on
   * disk); rejects with the error that stopped reading.
   */
  more(): Promise<boolean>;
  stop(): void;
}

/** The feed of a read phase that already ran to its end on this thread. */
export const finishedFeed: Feed = { more: async () => false, stop: () => {} };

export class WorkerFeed implements Feed {
  private readonly worker: Worker;
  private pending = false;
  private ended = false;
  private error: Error | null = null;
  private waiter: (() => void) | null = null;
  /** The read phase's report, once it has ended. */
  report: ReportData | null = null;

  constructor(job: ReadJob, onProgress: (rows: number, bytes: number) => void) {
    this.worker = new Worker(workerSpecifier(READ_WORKER));
    this.worker.onmessage = (event: MessageEvent<ReaderMessage>) => {
      const m = event.data;
      if (m.type === "progress") return onProgress(m.rows, m.bytes);
      if (m.type === "done") {
        this.report = m.report;
        onProgress(m.rows, m.bytes);
        this.ended = true;
      } else if (m.type === "failed") {
        this.error = "status" in m.error ? new AppError(m.error.status, m.error.code, m.error.details, m.error.extra) : new Error(m.error.message);
      }
      this.wake();
    };
    this.worker.onerror = (event) => {
      this.error = new Error(`the import's reading thread failed: ${event.message}`);
      this.wake();
    };
    this.worker.postMessage(job);
  }

  private wake(): void {
    this.pending = true;
    this.waiter?.();
  }

  more(): Promise<boolean> {
    return new Promise((resolve, reject) => {
      const settle = (): boolean => {
        if (this.error) reject(this.error);
        else if (this.ended) resolve(false);
        else if (this.pending) resolve(true);
        else return false;
        this.pending = false;
        this.waiter = null;
        return true;
      };
      if (!settle()) this.waiter = () => void settle();
    });
  }

  stop(): void {
    this.worker.terminate();
  }
}

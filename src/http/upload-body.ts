/**
 * Reading uploads without holding them in memory: the body cut off with 413 past a limit or 408
 * past its deadline, and a multipart part streamed to a temporary file for readers that need a file
 * (import, .docx).
 */
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { AppError, badRequest } from "../core/errors";
import { tooLarge } from "../core/files/upload";
import { multipartBoundary, readMultipart } from "../core/files/multipart";
import type { Site } from "../core/site";
import { uploadSpoolDir } from "../core/leftovers";

/** Room for multipart framing and small fields on top of the file itself. */
export const FRAMING_ALLOWANCE = 64 * 1024;

/** How long a request body may take: `timeoutMs`, plus one second per `minRate` bytes received. */
export type BodyPace = { timeoutMs: number; minRate: number };

/** What the server does as a watched body gets on (see body-limits.ts). */
export type BodyHooks = {
  /** The deadline is `msLeft` away now: told once the body is still coming at a look, and again each time the deadline moved on. */
  due(msLeft: number): void;
  /** Every byte has arrived, after `due` was told. */
  arrived(): void;
  /** No longer in flight: read to its end, or answered without. */
  settled(): void;
};

/** How often the watched bodies are looked at; a body is cut off at most this long after its deadline. */
const TICK_MS = 250;
const watching = new Set<BodyWatch>();
let ticker: ReturnType<typeof setInterval> | undefined;

/**
 * One timer for every body in flight rather than one per request: most bodies are in before the
 * first look (a JSON create arrives with its headers), and then their watch has cost a set entry,
 * not a timer and two changes of Bun's timer.
 */
function look(): void {
  const now = performance.now();
  for (const watch of watching) watch.check(now);
  if (watching.size === 0) {
    clearInterval(ticker);
    ticker = undefined;
  }
}

/**
 * How one request's body is getting on (see body-limits.ts, which starts one per request with a
 * body): when it is due, given what has arrived, and whether all of it has. The rule is Apache
 * mod_reqtimeout's: any upload that keeps the minimum rate finishes, however large, while a trickle
 * is cut off after about `timeoutMs`.
 */
export class BodyWatch {
  received = 0;
  /** The reader saw the body's end. */
  done = false;
  /** Past the deadline: the reader answers 408. */
  expired = false;
  /** Ends the read waiting now, if any; set by the reader while it reads. */
  interrupt: (() => void) | null = null;
  private readonly start = performance.now();
  /** The deadline the server was last told of; none while the body is young. */
  private told = -Infinity;
  private settled = false;

  constructor(readonly pace: BodyPace, private readonly hooks: BodyHooks) {
    watching.add(this);
    if (!ticker) {
      ticker = setInterval(look, TICK_MS);
      ticker.unref();
    }
  }

  private due(): number {
    return this.start + this.pace.timeoutMs + (this.received / this.pace.minRate) * 1000;
  }

  /** Called by the shared timer: cut off past the deadline; a body still coming after a look tells the server when it is due, again whenever that moved on by a second. */
  check(now: number): void {
    const due = this.due();
    if (now >= due) {
      this.expired = true;
      watching.delete(this);
      this.interrupt?.();
      return;
    }
    if (now - this.start >= TICK_MS && due - this.told >= 1000) {
      this.told = due;
      this.hooks.due(Math.ceil(due - now));
    }
  }

  finished(): void {
    if (this.done) return;
    this.done = true;
    // The server's timer was moved for the body only if the body took long enough to be told.
    if (!this.settled && this.told !== -Infinity) this.hooks.arrived();
    this.settle();
  }

  /** No longer in flight: read to its end, or answered without (then the connection closes). */
  settle(): void {
    if (this.settled) return;
    this.settled = true;
    watching.delete(this);
    this.hooks.settled();
  }
}

const watches = new WeakMap<Request, BodyWatch>();

export function watchBody(request: Request, pace: BodyPace, hooks: BodyHooks): BodyWatch {
  const watch = new BodyWatch(pace, hooks);
  watches.set(request, watch);
  return watch;
}

/** A request rebuilt on another URL (see request-target.ts) reads the same body under the same watch. */
export function carryBodyWatch(from: Request, to: Request): Request {
  const watch = watches.get(from);
  if (watch) watches.set(to, watch);
  return to;
}

const bodyTimedOut = (pace: BodyPace) =>
  new AppError(408, "REQUEST_TIMEOUT", `the request body did not arrive in time: it gets ${pace.timeoutMs / 1000} s (RESD_BODY_TIMEOUT) plus one second per ${pace.minRate} bytes sent (RESD_BODY_MIN_RATE)`);

/**
 * The body, cut off with 413 once it passes `bodyMax` bytes, or with 408 once it is past its
 * deadline (when the server watches it). A declared Content-Length is only believed without
 * Transfer-Encoding (the body-limit rule); otherwise the streamed bytes count.
 */
export async function* limitedBody(request: Request, bodyMax: number, max: number): AsyncGenerator<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (!request.headers.has("transfer-encoding") && declared !== null && Number(declared) > bodyMax) throw tooLarge(max);
  if (!request.body) return;
  const watch = watches.get(request);
  const reader = request.body.getReader();
  let ended = false;
  // A cancelled read settles as the body's end: `expired` tells the two apart.
  if (watch) watch.interrupt = () => void reader.cancel().catch(() => undefined);
  try {
    let seen = 0;
    for (;;) {
      if (watch?.expired) throw bodyTimedOut(watch.pace);
      const next = await reader.read();
      if (watch?.expired) throw bodyTimedOut(watch.pace);
      if (next.done) {
        ended = true;
        watch?.finished();
        return;
      }
      seen += next.value.length;
      if (watch) {
        watch.received = seen;
        // All that was declared has come, whether or not the reader asks for the end (a multipart
        // reader stops at the closing boundary): the connection can serve the next request.
        if (declared !== null && seen >= Number(declared)) watch.finished();
      }
      if (seen > bodyMax) throw tooLarge(max);
      yield next.value;
    }
  } finally {
    if (watch) watch.interrupt = null;
    // A reader that stops early (its part found, an error) lets the rest go, as leaving `for await` did.
    if (!ended) void reader.cancel().catch(() => undefined);
  }
}

/** Bodies up to this size, declared by Content-Length, are read whole (see `bodyBytes`). */
const WHOLE_MAX = 64 * 1024;

/**
 * The body's bytes, within `max` as `limitedBody` reads them. A small body declared by its
 * Content-Length is read whole rather than chunk by chunk (a JSON create cost a stream reader and
 * a generator step per chunk): one that keeps the minimum rate arrives before RESD_BODY_TIMEOUT,
 * the watch's first deadline, which the read is raced against.
 */
export async function bodyBytes(request: Request, max: number): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  const watch = watches.get(request);
  const size = declared === null || request.headers.has("transfer-encoding") ? NaN : Number(declared);
  if (watch && size <= WHOLE_MAX && size <= max && size <= (watch.pace.minRate * watch.pace.timeoutMs) / 1000) {
    // Past its deadline before anyone read it (the handler was slow to start): nothing more will come in time.
    if (watch.expired) throw bodyTimedOut(watch.pace);
    const bytes = await new Promise<Uint8Array>((resolve, reject) => {
      watch.interrupt = () => reject(bodyTimedOut(watch.pace));
      request.bytes().then(resolve, reject);
    }).finally(() => (watch.interrupt = null));
    watch.received = bytes.length;
    watch.finished();
    return bytes;
  }
  const chunks: Uint8Array[] = [];
  for await (const chunk of limitedBody(request, max, max)) chunks.push(chunk);
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

export type SpooledPart = { file: Blob; name: string; remove(): void };


/**
 * Streams the multipart part `file` into DIR/data/tmp within RESD_MAX_UPLOAD; the caller removes it.
 * Other parts are skipped.
 */
export async function spoolFilePart(site: Site, request: Request): Promise<SpooledPart> {
  const boundary = multipartBoundary(request.headers.get("content-type"));
  if (!boundary) throw badRequest("send the file as multipart/form-data in a part named `file`");
  const max = site.config.maxUpload;
  const folder = uploadSpoolDir(site.config.dir); // anything a crash leaves there is removed at start
  mkdirSync(folder, { recursive: true });
  const path = join(folder, `upload-${crypto.randomUUID()}`);
  const remove = () => rmSync(path, { force: true });
  try {
    for await (const part of readMultipart(limitedBody(request, max + FRAMING_ALLOWANCE, max), boundary)) {
      if (part.name !== "file") continue;
      const sink = Bun.file(path).writer();
      let size = 0;
      for await (const chunk of part.body) {
        size += chunk.length;
        if (size > max) throw tooLarge(max);
        sink.write(chunk);
      }
      await sink.end();
      return { file: Bun.file(path), name: part.filename ?? "upload", remove };
    }
  } catch (e) {
    remove();
    if (e instanceof AppError) throw e;
    throw badRequest(`the multipart body cannot be read: ${(e as Error).message}`);
  }
  remove();
  throw badRequest("the multipart part `file` is missing or not a file");
}

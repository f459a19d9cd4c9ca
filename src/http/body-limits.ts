/**
 * Slow request bodies. Nothing bounded the time a body may take but Bun's idleTimeout, which
 * counts from the request's arrival and ignores the body's bytes: a trickled body held its
 * connection, file descriptor and request for 30 s, again and again and from any number of
 * connections, while an honest upload that needed more than 30 s (50 MiB over a slow link) was
 * dropped without an answer. Here, for every request that declares a body:
 *
 * - it has RESD_BODY_TIMEOUT seconds to arrive, plus one second per RESD_BODY_MIN_RATE bytes it has
 *   sent (see BodyWatch in upload-body.ts); past that its reader answers 408. For a body still
 *   coming a quarter of a second in, Bun's timer of the request follows that deadline, a few
 *   seconds behind it (so the 408 goes out first, and a body nobody reads is still dropped), and
 *   gives the handler its usual time once the body is in;
 * - an answer given before the body has all arrived (that 408, a 413, a 401 before the body was
 *   read, a 404) closes the connection: Bun would otherwise read the rest of the body to reuse the
 *   connection, as slowly as the client sends it;
 * - at most RESD_MAX_BODIES bodies are received at once. Bun has no bound on connections; requests
 *   without a body are answered at the server's pace, so the bodies in flight are what a slow
 *   client can pile up. Beyond the bound a request with a body gets 503 at once, and its connection
 *   is closed. (Headers have a bound of Bun's own: a request whose headers are not complete within
 *   about 10 s is dropped.)
 */
import type { Server } from "bun";
import type { Config } from "../core/config";
import { requestIdOf } from "./context";
import { json } from "./envelope";
import { logRequest } from "./logging";
import { watchBody, type BodyWatch } from "./upload-body";

type Answer = (request: Request) => Response | Promise<Response>;

/** How soon a refused client should come back: a trickled body is cut off within RESD_BODY_TIMEOUT, most bodies far sooner. */
const RETRY_AFTER_S = 5;
/** How long after a body's deadline Bun's timer drops the connection, if the 408 has not closed it. */
const BACKSTOP_S = 5;

/** The Bun server (known once it listens) and the idleTimeout it was given. */
export type BunTimers = { server: () => Server<undefined>; idleTimeout: number };

/** A body follows the headers (RFC 9112 6.3): a Content-Length other than 0, or any Transfer-Encoding. */
export function declaresBody(request: Request): boolean {
  const length = request.headers.get("content-length");
  return (length !== null && length !== "0") || request.headers.has("transfer-encoding");
}

export function guardBodies(config: Pick<Config, "bodyTimeout" | "bodyMinRate" | "maxBodies">, bun: BunTimers, answer: Answer): Answer {
  const pace = { timeoutMs: config.bodyTimeout * 1000, minRate: config.bodyMinRate };
  let receiving = 0;
  const settled = () => void receiving--;
  return (request) => {
    if (!declaresBody(request)) return answer(request);
    if (receiving >= config.maxBodies) return refused(request, config.maxBodies);
    receiving++;
    const watch = watchBody(request, pace, {
      due: (ms) => bun.server().timeout(request, Math.ceil(ms / 1000) + BACKSTOP_S),
      arrived: () => bun.server().timeout(request, bun.idleTimeout),
      settled,
    });
    let res: Response | Promise<Response>;
    try {
      res = answer(request);
    } catch (e) {
      watch.settle();
      throw e;
    }
    return res instanceof Response ? closing(res, watch) : res.then((r) => closing(r, watch), (e: unknown) => {
      watch.settle();
      throw e;
    });
  };
}

function closing(res: Response, watch: BodyWatch): Response {
  if (!watch.done) res.headers.set("connection", "close");
  watch.settle();
  return res;
}

/** Built here rather than thrown: a flood of these must not each write an error to the log, only its request line. */
function refused(request: Request, max: number): Response {
  const t0 = performance.now();
  const id = requestIdOf(request);
  const res = json(503, { message: "SERVICE_UNAVAILABLE", request_id: id, details: `the server is receiving ${max} request bodies already (RESD_MAX_BODIES); try again shortly` }, t0,
    { "retry-after": String(RETRY_AFTER_S), connection: "close", "cache-control": "no-store", "x-request-id": id });
  logRequest(request.method, request.url, 503, performance.now() - t0, "-", id);
  return res;
}

/**
 * Starts the HTTP server for a site: every request logged, background upkeep running, and a graceful
 * stop on SIGTERM/SIGINT (see `shutdown`).
 */
import type { Server } from "bun";
import type { Site } from "../core/site";
import { HISTORY_WINDOW_MS } from "../core/site";
import { createApp, type App } from "./app";
import { readOneNow, readOneRoute } from "./records";
import { requestInfo } from "./context";
import { errorResponse } from "./errors";
import { flushLogs, logEvent, logRequest, resolveLogFormat, setLogFormat } from "./logging";
import { startHooks, stopHooks } from "../core/extensions/runtime";
import { checkMail } from "../core/mail/send";
import { withCors } from "./cors";
import { servedBy } from "./caller";
import { declaresBody, guardBodies } from "./body-limits";
import { withSecurityHeaders } from "./security-headers";
import { normalizeTarget } from "./request-target";
import { watchDefinitions, type DefinitionsWatch } from "../core/definitions/watch";
import { removeLeftovers } from "../core/leftovers";
import { claimPidFile } from "../core/pidfile";
import { Hub } from "../core/realtime/hub";
import { loadAgents } from "../core/agents/definitions";

/** Work that must reach a safe point before the database closes (a job worker, an import). */
export type Drain = () => Promise<void> | void;

export type Running = {
  app: App;
  server: Server<undefined>;
  /** Registers work to wait for on shutdown; it runs while in-flight requests finish, within the same bound. */
  onDrain(fn: Drain): void;
  /** Graceful stop: no new connections, in-flight requests and drains finish (bounded), WAL checkpointed. */
  stop(): Promise<void>;
};

/**
 * Seconds Bun gives a request from its arrival until its answer begins (bytes of its body do not
 * count); a request with a body gets its body's deadline instead, then this from the body's end.
 */
const IDLE_TIMEOUT_S = 30;
/** How long start-up waits for the store to hear every other instance (a transaction of theirs that runs on). */
const READY_WAIT_MS = 10_000;

/** Bun's default body cap is 128 MiB; a larger upload limit must raise it (multipart adds a little). */
const bodyCap = (maxUpload: number) => Math.max(128 * 1024 * 1024, maxUpload + 1024 * 1024);

/**
 * Wraps the app's fetch with the request log: one line per answer, 404s and 405s included. The
 * request target is normalised first, so the router, permissions and the log see one path.
 */
function logged(answer: (request: Request, incoming: Request) => Response | Promise<Response>) {
  return (incoming: Request): Response | Promise<Response> => {
    const t0 = performance.now();
    let request = incoming;
    let res: Response | Promise<Response>;
    try {
      request = normalizeTarget(incoming);
      res = answer(request, incoming);
    } catch (e) {
      res = failed(e, t0);
    }
    // An answer ready at once is sent without a promise in between (GET of one record, usually).
    return res instanceof Response ? log(request, res, t0) : res.then((r) => log(request, r, t0), (e) => log(request, failed(e, t0), t0));
  };
}

// Elysia answers its own errors; this only catches what escaped it. Logged once, in errorResponse.
const failed = (e: unknown, t0: number) => errorResponse(e, t0, crypto.randomUUID());

function log(request: Request, res: Response, t0: number): Response {
  const info = requestInfo.get(request);
  const id = info?.id ?? res.headers.get("x-request-id") ?? "-";
  // Duration is until the answer's headers are ready; a streamed body may flow on after it.
  logRequest(request.method, request.url, res.status, performance.now() - t0, info?.user ?? "anonymous", id);
  return res;
}

/** Resource names of the second path segment that are endpoints of their own, not resources. */
const NOT_RECORDS = new Set(["auth", "openai", "session"]);
const RESERVED_SEGMENTS = new Set(["export", "import", "import-document"]);

/**
 * GET of one record is the most frequent request: Bun's own route table takes it straight to its
 * handler (Elysia's general router cost a sixth of its time), and an answer given in place is
 * logged with the path the router matched, without reading the request's URL (see readOneNow).
 * Everything else, and any path of that shape that names an endpoint instead of a record, goes
 * through the app as before.
 */
function hotRoutes(site: Site, all: (r: Request) => Response | Promise<Response>) {
  const general = logged((request, incoming) => {
    const { resource, uuid } = (incoming as Request & { params: { resource: string; uuid: string } }).params;
    return readOneRoute(site, request, resource, uuid);
  });
  const readOne = withCors(site.config.corsOrigins, (req: Request) => {
    const t0 = performance.now();
    const { resource, uuid } = (req as Request & { params: { resource: string; uuid: string } }).params;
    const now = readOneNow(site, req, resource, uuid, t0);
    if (!now) return general(req);
    logRequest(req.method, `/api/v1/${resource}/${uuid}`, now.response.status, performance.now() - t0, now.user, now.id);
    return now.response;
  });
  return {
    "/api/v1/:resource/:uuid": (req: Request & { params: { resource: string; uuid: string } }) => {
      const { resource, uuid } = req.params;
      // Percent-encoded segments are left to the app, which decodes them as it always has. A read
      // that declares a body goes that way too: its answer must close the connection (body-limits.ts).
      const hot = (req.method === "GET" || req.method === "HEAD") && !resource.startsWith(".") && !NOT_RECORDS.has(resource)
        && !RESERVED_SEGMENTS.has(uuid) && !resource.includes("%") && !uuid.includes("%") && !declaresBody(req);
      return hot ? readOne(req) : all(req);
    },
  };
}

function startUpkeep(site: Site, definitions: DefinitionsWatch) {
  const purge = () => site.store.purgeHistory(Date.now() - HISTORY_WINDOW_MS).catch((e) => logEvent("history purge failed", { error: String(e) }));
  const timer = setInterval(purge, 3600_000);
  timer.unref();
  const removed = removeLeftovers(site.config.dir);
  if (removed.length) logEvent("removed temporary files left by an earlier crash", { files: removed.length });
  return { purge, stop: () => { clearInterval(timer); definitions.stop(); } };
}

/**
 * A request that arrives while a definition change is being applied (a few ms, see
 * definitions/watch.ts), or that names a resource whose new file is there but not yet served,
 * waits for it: a script's line after the one that wrote resources/x.json reaches x.
 */
function afterDefinitions<R extends Request>(definitions: DefinitionsWatch, resourceOf: (request: R) => string | null, answer: (request: R) => Response | Promise<Response>) {
  return (request: R): Response | Promise<Response> => {
    const settling = definitions.settling() ?? definitions.unseen(resourceOf(request));
    return settling ? settling.then(() => answer(request)) : answer(request);
  };
}

/** The `{resource}` of a request to /api/v1/{resource}…, as sent (a percent-encoded one is no resource name). */
function resourceOf(request: Request): string | null {
  const url = request.url;
  const path = url.indexOf("/", url.indexOf("//") + 2);
  if (path < 0 || !url.startsWith("/api/v1/", path)) return null;
  const from = path + "/api/v1/".length;
  let end = from;
  while (end < url.length && url[end] !== "/" && url[end] !== "?" && url[end] !== "#") end++;
  return end > from ? url.slice(from, end) : null;
}

function realtimeOptions(site: Site) {
  const c = site.config;
  return {
    maxStreams: c.realtimeMaxStreams,
    maxPerOwner: c.realtimeMaxStreamsPerUser,
    window: c.realtimeWindow,
    windowMs: 5 * 60_000,
    heartbeatMs: c.realtimeHeartbeat * 1000,
    recheckMs: 1000,
    pollMs: 250,
  };
}

/** Stops in order: listening, then in-flight requests and drains (bounded), then the database. */
async function shutdown(site: Site, server: Server<undefined>, drains: Drain[], stopUpkeep: () => void, releasePid: () => void) {
  stopUpkeep();
  const boundMs = site.config.shutdownTimeout * 1000;
  const settled = Promise.all([server.stop(false), Promise.allSettled(drains.map(async (fn) => fn()))]);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = await Promise.race([
    settled.then(() => false),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), boundMs))),
  ]);
  clearTimeout(timer);
  if (timedOut) {
    logEvent("shutdown bound reached: closing the remaining connections", { seconds: site.config.shutdownTimeout });
    await server.stop(true);
  }
  // close() lets the write queue finish its transaction (an import's safe point) and checkpoints the WAL.
  await site.close();
  releasePid();
}

/** First SIGTERM/SIGINT: graceful stop, exit 0. A second one: exit at once. */
function exitOnSignals(stop: () => Promise<void>) {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      logEvent("second signal: exiting at once", { signal });
      void flushLogs();
      process.exit(signal === "SIGINT" ? 130 : 143);
    }
    stopping = true;
    logEvent("resd shutting down", { signal });
    stop().then(
      async () => {
        logEvent("resd stopped");
        await flushLogs();
        process.exit(0);
      },
      async (e) => {
        logEvent("shutdown failed", { error: String((e as Error)?.stack ?? e) });
        await flushLogs();
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
}

export async function startServer(site: Site, opts: { quiet?: boolean; signals?: boolean } = {}): Promise<Running> {
  setLogFormat(resolveLogFormat(site.config.logFormat));
  await startHooks(site); // extensions load (or start-up fails) before anything listens
  // No realtime stream may open before other instances' commits are all told here.
  await site.store.ready?.(READY_WAIT_MS);
  const hub = site.config.realtimeMaxStreams > 0 ? new Hub(site, realtimeOptions(site)) : null;
  await hub?.start();
  const app = createApp(site, hub);
  // Once it answers, the server is asked for a caller's address (fair share of list queries) and
  // to move a request's timer (body deadlines).
  const bun = { server: () => server, idleTimeout: IDLE_TIMEOUT_S };
  servedBy(site, () => server);
  const all = withCors(site.config.corsOrigins, guardBodies(site.config, bun, logged((request) => app.fetch(request))));
  const definitions = watchDefinitions(site, logEvent);
  const readOne = hotRoutes(site, all)["/api/v1/:resource/:uuid"];
  let server: Server<undefined>;
  try {
    server = Bun.serve({
      hostname: site.config.host,
      port: site.config.port,
      idleTimeout: IDLE_TIMEOUT_S,
      maxRequestBodySize: bodyCap(site.config.maxUpload),
      ...withSecurityHeaders(site.config, {
        routes: {
          "/api/v1/:resource/:uuid": afterDefinitions(definitions, (r) => r.params.resource, readOne),
          // A realtime stream lasts: Bun's idle timeout (which writes do not reset) would cut it.
          "/api/v1/realtime": (request: Request) => {
            server.timeout(request, 0);
            return afterDefinitions(definitions, resourceOf, all)(request);
          },
          // So does a conversation's `events` stream while an agent works.
          "/api/v1/agent-chat": (request: Request) => {
            if (new URL(request.url).searchParams.get("operation") === "events") server.timeout(request, 0);
            return afterDefinitions(definitions, resourceOf, all)(request);
          },
        },
        fetch: afterDefinitions(definitions, resourceOf, all),
      }),
    });
  } catch (e) {
    definitions.stop();
    throw e;
  }
  const releasePid = claimPidFile(site.config.dir);
  const upkeep = startUpkeep(site, definitions);
  await upkeep.purge();
  site.store.warmSearch?.();
  const drains: Drain[] = [];
  drains.push(() => stopHooks(site));
  if (hub) drains.push(() => hub.stop());
  let stopped: Promise<void> | null = null;
  const stop = () => (stopped ??= shutdown(site, server, drains, upkeep.stop, releasePid));
  if (opts.signals !== false) exitOnSignals(stop);
  for (const [resource, why] of site.refused) logEvent("resource not served", { resource, reason: why }, "error");
  // The SMTP server is asked once, without holding up the start: a wrong setting shows in the log.
  void checkMail(site).then((problem) => problem && logEvent("mail", { problem }, "error"));
  for (const { file, message } of loadAgents(site).problems) logEvent("agent not offered", { file, reason: message }, "error");
  if (!opts.quiet) logEvent(`resd listening on http://${server.hostname}:${server.port} (site ${site.config.dir})`);
  return { app, server, onDrain: (fn) => void drains.push(fn), stop };
}

/**
 * `/api/v1/realtime`: changes to records as Server-Sent Events (see docs/realtime.md). GET opens a
 * stream with `?subscribe=…`; POST /api/v1/realtime/{client_id} replaces a stream's subscriptions.
 * The hub (core/realtime/hub.ts) decides what each stream is told; this file makes a stream of it.
 */
import { Elysia } from "elysia";
import type { Site } from "../core/site";
import { AppError, badRequest, methodNotAllowed } from "../core/errors";
import type { Hub, Outlet, Stream } from "../core/realtime/hub";
import { parseSubscriptions, splitSubscribe } from "../core/realtime/subscription";
import { authenticate, crossOriginRefused, sameOrigin } from "./auth";
import { callerKey } from "./caller";
import { handle, type Ctx } from "./context";
import { json } from "./envelope";

/** How long an EventSource waits before it reconnects (ms), told at the start of every stream. */
const RETRY_MS = 2000;
const encoder = new TextEncoder();

/** The hub, or 503 on a server whose realtime is off. */
function served(hub: Hub | null): Hub {
  if (!hub) throw new AppError(503, "SERVICE_UNAVAILABLE", "realtime is off on this server (RESD_REALTIME_MAX_STREAMS=0)");
  return hub;
}

/** A ReadableStream of the events, bounded to `buffer` bytes waiting for the reader. */
function outlet(buffer: number, gone: () => void): { out: Outlet; body: ReadableStream<Uint8Array> } {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let open = true;
  let drained: () => void = () => {};
  const body = new ReadableStream<Uint8Array>(
    {
      start: (c) => void (controller = c),
      // Called as the reader takes what waits: a stream behind goes on from the window.
      pull: () => drained(),
      cancel: () => {
        open = false;
        gone();
      },
    },
    { highWaterMark: buffer, size: (chunk) => chunk?.byteLength ?? 0 },
  );
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  const out: Outlet = {
    write(chunk) {
      if (!open) return;
      pending.push(chunk);
      pendingBytes += chunk.byteLength;
    },
    flush() {
      if (!open || !pending.length) return;
      // Taken out first: enqueue may call pull at once, and what it writes is the next piece.
      const chunk = pending.length === 1 ? pending[0] : Buffer.concat(pending, pendingBytes);
      pending = [];
      pendingBytes = 0;
      controller.enqueue(chunk);
    },
    full: () => !open || (controller.desiredSize ?? 0) - pendingBytes <= 0,
    onDrain: (fn) => void (drained = fn),
    end() {
      if (!open) return;
      out.flush();
      open = false;
      controller.close();
    },
  };
  return { out, body };
}

/** The same credentials as the request's, to work the caller out again while the stream lasts. */
function probeOf(request: Request): Request {
  const headers = new Headers();
  for (const name of ["authorization", "cookie"]) {
    const v = request.headers.get(name);
    if (v !== null) headers.set(name, v);
  }
  return new Request(request.url, { headers });
}

async function openStream(c: Ctx, maybe: Hub | null): Promise<Response> {
  if (c.request.method !== "GET") throw methodNotAllowed("GET");
  const hub = served(maybe);
  const p = await c.principal();
  // A page of another site cannot read the stream (no CORS with credentials), but it would use up
  // the user's streams and keep the session in use: a session's stream is for this site's pages.
  if (p.viaSession && !sameOrigin(c.request)) throw crossOriginRefused();
  const q = c.url().searchParams;
  const subscriptions = parseSubscriptions(c.site, p, splitSubscribe(q.getAll("subscribe")));
  const probe = probeOf(c.request);
  let stream: Stream | null = null;
  const { out, body } = outlet(c.site.config.realtimeBuffer, () => stream && hub.gone(stream));
  out.write(encoder.encode(`retry: ${RETRY_MS}\n\n`));
  out.flush();
  stream = hub.open({
    principal: p,
    owner: callerKey(c.site, c.request, p) ?? "system",
    subscriptions,
    reauth: () => authenticate(c.site, probe),
    lastEventId: c.request.headers.get("last-event-id") ?? q.get("last_event_id"),
    out,
  });
  const opened = stream;
  c.request.signal.addEventListener("abort", () => hub.gone(opened), { once: true });
  return new Response(body, {
    status: 200,
    headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store", "x-accel-buffering": "no" },
  });
}

async function resubscribe(c: Ctx, hub: Hub | null, clientId: string): Promise<Response> {
  if (c.request.method !== "POST") throw methodNotAllowed("POST");
  served(hub);
  const body = await c.json();
  const raw = body && typeof body === "object" && !Array.isArray(body) ? (body as { subscribe?: unknown }).subscribe : undefined;
  const texts = typeof raw === "string" ? [raw] : Array.isArray(raw) && raw.every((t) => typeof t === "string") ? (raw as string[]) : null;
  if (texts === null) throw badRequest('the body must be {"subscribe": ["notes", "tasks/<uuid>", "notes?filter=…"]}');
  const s = served(hub).resubscribe(clientId, await c.principal(), splitSubscribe(texts));
  return json(200, { client_id: s.id, subscriptions: s.subscriptions.map((x) => x.text) }, c.t0);
}

export const realtimeRoutes = (site: Site, hub: Hub | null) =>
  new Elysia({ name: "realtime" })
    .all("/api/v1/realtime", ({ request }) => handle(site, request, (c) => openStream(c, hub)), { parse: "none" })
    .all("/api/v1/realtime/:client", ({ request, params }) => handle(site, request, (c) => resubscribe(c, hub, params.client)), { parse: "none" });

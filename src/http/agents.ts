/**
 * `/api/v1/agent-chat` (a signed-in user's conversations with agents) and `/api/v1/agent-remote`
 * (another site's agents asking this one's, with a bearer token); the work is in src/core/agents.
 *
 * agent-chat takes its operation from the query (GET) or the JSON body (POST). Operations that
 * change something (post, read, delete) are POST only: a GET can be sent by any page a user visits
 * (an image, a link), and must not start an agent's run in their name.
 */
import { Elysia } from "elysia";
import type { Principal } from "../core/access/permissions";
import { conversationView, getConversationView, listConversations, markRead, post, removeConversation, unread } from "../core/agents/chat";
import { getConversation, ownConversation } from "../core/agents/conversations";
import { follow, type LiveEvent } from "../core/agents/live";
import { remoteAsk, remoteUpdates } from "../core/agents/remote";
import { requireTeam, roster } from "../core/agents/roster";
import { AppError, badRequest, methodNotAllowed, unauthorized } from "../core/errors";
import type { Site } from "../core/site";
import { handle, type Ctx } from "./context";
import { json } from "./envelope";

const NO_STORE = { "cache-control": "no-store" };
const READS = new Set(["list", "get", "unread", "events"]);
const WRITES = new Set(["post", "read", "delete"]);
/** How often an events stream looks at the stored conversation (a run on another instance). */
const LOOK_MS = 2000;
const HEARTBEAT_MS = 20_000;

async function signedIn(c: Ctx): Promise<Principal> {
  const p = await c.principal();
  if (p.kind !== "user") throw unauthorized("agent-chat needs a signed-in user");
  return p;
}

async function chat(c: Ctx): Promise<Response> {
  const method = c.request.method;
  if (method !== "GET" && method !== "POST") throw methodNotAllowed("GET, POST");
  const raw = method === "POST" ? await c.json() : Object.fromEntries(c.url().searchParams);
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) throw badRequest("the body must be a JSON object with `operation`");
  const body = raw as Record<string, unknown>;
  const op = body.operation;
  if (typeof op !== "string" || (!READS.has(op) && !WRITES.has(op))) {
    throw badRequest(`\`operation\` must be one of ${[...READS, ...WRITES].join(", ")}`);
  }
  if (method === "GET" && WRITES.has(op)) throw new AppError(405, "METHOD_NOT_ALLOWED", `the operation ${op} changes something: send it as POST with a JSON body`, { allow: "POST" });
  const p = await signedIn(c);
  const site = c.site;
  switch (op) {
    case "list": return json(200, await listConversations(site, p), c.t0, NO_STORE);
    case "get": return json(200, await getConversationView(site, p, body.uuid), c.t0, NO_STORE);
    case "unread": return json(200, await unread(site, p), c.t0, NO_STORE);
    case "post": return json(200, await post(site, p, body), c.t0, NO_STORE);
    case "read": return json(200, await markRead(site, p, body.uuid), c.t0, NO_STORE);
    case "delete": return json(200, await removeConversation(site, p, body.uuid), c.t0, NO_STORE);
    default: return events(c, p, body.uuid);
  }
}

/**
 * `events`: Server-Sent Events of one conversation. `state` (the `get` view) first and whenever the
 * stored conversation changes; `text`, `step`, `done`, `failed` as a run in this process works;
 * the stream ends once no run is working.
 */
async function events(c: Ctx, p: Principal, uuid: unknown): Promise<Response> {
  const site = c.site;
  // Read once for the stream: it names the agents in every `state` (their files are read when asked).
  const all = roster(site);
  const team = requireTeam(site, p, all);
  const first = await ownConversation(site, p.uuid!, uuid);
  const enc = new TextEncoder();
  let stop = () => {};
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      let open = true;
      let seen = "";
      const send = (event: string, data: unknown) => {
        if (open) controller.enqueue(enc.encode(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`));
      };
      const end = () => {
        if (!open) return;
        open = false;
        stop();
        controller.close();
      };
      const look = async () => {
        const now = await getConversation(site, first.uuid);
        if (!now || now.owner !== p.uuid) return end();
        const view = conversationView(site, now, team, all);
        // What the follower would see differs: a message, a run's state or step (seconds of `modified` are too coarse).
        const shown = JSON.stringify([view.messages.at(-1)?.id, view.messages.length, view.working]);
        if (shown !== seen) {
          seen = shown;
          send("state", view);
        }
        if (!view.working.some((w) => w.status === "working")) end();
      };
      const live = (e: LiveEvent) => {
        send(e.type, e);
        if (e.type === "done" || e.type === "failed") void look().catch(end);
      };
      // `state` comes first: what a run tells (and the text it streamed so far) waits for it.
      let early: LiveEvent[] | null = [];
      const unfollow = follow(site, first.uuid, (e) => (early ? early.push(e) : live(e)));
      const timer = setInterval(() => void look().catch(end), LOOK_MS);
      const beat = setInterval(() => open && controller.enqueue(enc.encode(": keep-alive\n\n")), HEARTBEAT_MS);
      stop = () => {
        unfollow();
        clearInterval(timer);
        clearInterval(beat);
      };
      c.request.signal.addEventListener("abort", () => {
        open = false;
        stop();
      }, { once: true });
      void look()
        .then(() => {
          const told = early ?? [];
          early = null;
          for (const e of told) live(e);
        })
        .catch(end);
    },
    cancel() {
      stop();
    },
  });
  // The server exempts this stream from Bun's idle timeout (http/server.ts); heartbeats keep proxies from cutting it.
  return new Response(body, { status: 200, headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store", "x-accel-buffering": "no" } });
}

async function agentRemote(c: Ctx): Promise<Response> {
  if (c.request.method !== "POST") throw methodNotAllowed("POST");
  // Another site signs in with a token; a page's session cookie is no way in.
  if (!c.request.headers.has("authorization")) throw unauthorized("agent-remote needs `Authorization: Bearer <token>` of a user of this site with agent-remote");
  const p = await c.principal();
  if (p.kind !== "user") throw unauthorized("agent-remote needs a user's bearer token");
  const raw = await c.json();
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) throw badRequest('the body must be {"operation": "ask" | "updates", …}');
  const body = raw as Record<string, unknown>;
  if (body.operation === "ask") return json(200, await remoteAsk(c.site, p, body), c.t0, NO_STORE);
  if (body.operation === "updates") return json(200, await remoteUpdates(c.site, p, body), c.t0, NO_STORE);
  throw badRequest("`operation` must be ask or updates");
}

export const agentRoutes = (site: Site) =>
  new Elysia({ name: "agents" })
    .all("/api/v1/agent-chat", ({ request }) => handle(site, request, chat), { parse: "none" })
    .all("/api/v1/agent-remote", ({ request }) => handle(site, request, agentRemote), { parse: "none" });

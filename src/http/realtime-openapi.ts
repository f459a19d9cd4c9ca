/** The realtime operations of the OpenAPI document, for callers who may view some resource (see openapi-doc.ts). */
import { can, type Principal } from "../core/access/permissions";
import { MAX_SUBSCRIPTIONS } from "../core/realtime/subscription";
import type { Site } from "../core/site";

export const REALTIME_TAG = "resd:realtime";
const errors = (...codes: number[]) => Object.fromEntries(codes.map((c) => [String(c), { $ref: `#/components/responses/E${c}` }]));
const str = { type: "string" };

const EVENTS = `Server-Sent Events (docs/realtime.md). Each event has an SSE \`id\` (\`<instance>-<n>\`, what Last-Event-ID resumes from), an \`event\` name and JSON \`data\`:
- \`connect\` {client_id, id, subscriptions}
- \`create\`, \`update\`, \`delete\`, \`restore\` {id, action, resource, uuid, subscription, subscriptions, record, _modified, _modified_by}: \`record\` as the API returns it (hidden and encrypted fields never sent; for a delete, as it was); one event per way the stream's subscriptions see the change, \`subscriptions\` naming them. For a filtered subscription a record that comes to match is a \`create\`, one that stops matching a \`delete\`.
- \`bulk\` {id, action: "bulk", resource, count, subscription, subscriptions}: more records changed at once than are told one by one (RESD_REALTIME_BULK; another process's writes on SQLite, count null): reload
- \`reset\` {id, reason}: what was missed since Last-Event-ID is not kept: reload
- \`unsubscribed\` {subscription, reason}: the caller lost the right to view it (ACCESS_DENIED) or the resource is gone
- \`close\` {reason, message}: the stream ends (UNAUTHORIZED, SLOW_READER, SHUTDOWN)
Comment lines (\`: ping\`) every RESD_REALTIME_HEARTBEAT seconds keep an idle stream open.`;

/** Adds the realtime paths when the caller may view at least one resource; true when it did. */
export function realtimePaths(site: Site, p: Principal, paths: Record<string, unknown>): boolean {
  if (site.config.realtimeMaxStreams === 0) return false;
  const viewable = [...site.defs.values()].filter((d) => !d.internal && !d.name.startsWith(".") && can(p, d.name, "view")).map((d) => d.name);
  if (!viewable.length) return false;
  const subscribe = {
    type: "array", maxItems: MAX_SUBSCRIPTIONS,
    items: { type: "string", description: `RESOURCE, RESOURCE/UUID or RESOURCE?filter=… (the list API's filter). Resources this caller may view: ${viewable.join(", ")}` },
  };
  paths["/api/v1/realtime"] = { get: {
    tags: [REALTIME_TAG], operationId: "resd:realtime.open",
    summary: "Open a stream of the changes to the records subscribed to (text/event-stream)",
    parameters: [
      { name: "subscribe", in: "query", required: false, style: "form", explode: true, schema: subscribe, description: "comma-separated; a filtered subscription comes last in its parameter (its filter has commas of its own). Repeat the parameter for more" },
      { name: "Last-Event-ID", in: "header", required: false, schema: str, description: "the SSE id of the last event seen: resumes after it within the window, else `reset`" },
      { name: "last_event_id", in: "query", required: false, schema: str, description: "the same, for a client that cannot set headers" },
    ],
    responses: {
      "200": { description: EVENTS, content: { "text/event-stream": { schema: str } } },
      ...errors(400, 401, 403, 404),
      "429": { description: "TOO_MANY_REQUESTS: RESD_REALTIME_MAX_STREAMS or RESD_REALTIME_MAX_STREAMS_PER_USER reached (Retry-After)", content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } },
    },
  } };
  paths["/api/v1/realtime/{client_id}"] = { post: {
    tags: [REALTIME_TAG], operationId: "resd:realtime.resubscribe",
    summary: "Replace an open stream's subscriptions (all or nothing; only the stream's own caller)",
    parameters: [{ name: "client_id", in: "path", required: true, schema: str, description: "from the stream's connect event" }],
    requestBody: { required: true, content: { "application/json": { schema: { type: "object", properties: { subscribe }, required: ["subscribe"] } } } },
    responses: {
      "200": { description: "the subscriptions now in force", content: { "application/json": { schema: { allOf: [{ $ref: "#/components/schemas/Envelope" }, { type: "object", properties: { client_id: str, subscriptions: { type: "array", items: str } } }] } } } },
      ...errors(400, 401, 403, 404),
    },
  } };
  return true;
}

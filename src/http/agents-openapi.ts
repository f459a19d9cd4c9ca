/**
 * The agents' endpoints of the OpenAPI document (see openapi-doc.ts), for the callers who may use
 * them: `/api/v1/agent-chat` (chat-<agent> for at least one agent), `/api/v1/agent-remote`
 * (agent-remote, bearer token) and `/api/v1/mcp` (any user's bearer token). The endpoints are in
 * agents.ts and mcp.ts, the work in src/core/agents.
 */
import { hasPermission, type Principal } from "../core/access/permissions";
import { MAX_TEXT } from "../core/agents/chat";
import { AGENT_ID } from "../core/agents/definitions";
import { AGENT_REMOTE, MAX_EARLIER } from "../core/agents/remote";
import { roster, teamOf } from "../core/agents/roster";
import { AGENT_ACT, TOOLS, toolsFor } from "../core/agents/tools";
import type { Site } from "../core/site";

export const AGENTS_TAG = "resd:agents";
type Schema = Record<string, unknown>;
const TAGS = [AGENTS_TAG];
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const errors = (...codes: number[]) => Object.fromEntries(codes.map((c) => [String(c), { $ref: `#/components/responses/E${c}` }]));
const error = (description: string) => ({ description, content: { "application/json": { schema: ref("Error") } } });
const envelope = (schema: Schema) => ({ allOf: [ref("Envelope"), schema] });
const str = { type: "string" };
const int = { type: "integer" };
const ms = (what: string) => ({ type: "integer", description: `${what}, milliseconds since the epoch` });
const BEARER_ONLY = [{ bearerAuth: [] }];

const READS = ["list", "get", "unread", "events"];
const POSTS = ["list", "get", "unread", "post", "read", "delete"];
const RUN_ID = "^[A-Za-z0-9-]{1,64}$";

/** Shapes of src/core/agents/chat.ts, conversations.ts, run.ts and remote.ts. */
const SCHEMAS: Record<string, Schema> = {
  AgentTeam: { type: "object", description: "the agents the caller may chat with: id → name", additionalProperties: str },
  AgentMessage: { type: "object", properties: {
    id: { ...int, description: "1, 2, … within the conversation" },
    from: { ...str, description: "`user` for the owner, else the agent's id" },
    text: str, at: ms("when it was written"),
    link: { ...str, description: "the admin page of the (last) record the agent touched in the run that wrote this reply" },
    steps: { type: "array", items: str, description: "what the run did, one line per tool call" },
    run: { ...str, description: "the run that wrote this reply" },
  }, required: ["id", "from", "text", "at"] },
  AgentStep: { type: "object", properties: {
    tool: str, arguments: { type: "object", additionalProperties: true }, ok: { type: "boolean" }, summary: str,
    resource: str, uuid: str, at: ms("when the tool answered"),
  }, required: ["tool", "arguments", "ok", "summary"] },
  AgentConversation: { type: "object", description: "one conversation (`get`, `post`; the `state` event)", properties: {
    uuid: str, title: str, team: ref("AgentTeam"),
    messages: { type: "array", items: ref("AgentMessage"), description: "the latest RESD_AGENT_MESSAGES" },
    working: { type: "array", description: "runs still open, and those that failed since the owner last wrote", items: { type: "object", properties: {
      run: str, agent: str, name: str, status: { type: "string", enum: ["working", "failed"] },
      steps: { type: "array", items: str, description: "the latest steps" }, error: { ...str, description: "why it failed" },
    }, required: ["run", "agent", "name", "status", "steps"] } },
  }, required: ["uuid", "title", "team", "messages", "working"] },
  AgentConversationList: { type: "object", description: "the caller's conversations, the latest first (`list`)", properties: {
    conversations: { type: "array", items: { type: "object", properties: {
      uuid: str, title: str, updated_at: ms("the last change (a message, a run's step)"),
      unread: { ...int, description: "agents' messages since the owner last read" }, waiting: { type: "boolean", description: "an agent is still answering" },
      last: { type: "object", nullable: true, properties: { from: str, text: { ...str, description: "its first 200 characters" }, at: ms("when it was written") }, required: ["from", "text", "at"] },
    }, required: ["uuid", "title", "updated_at", "unread", "waiting", "last"] } },
    team: ref("AgentTeam"),
  }, required: ["conversations", "team"] },
  AgentUnread: { type: "object", description: "`unread`", properties: {
    unread: { ...int, description: "agents' messages not read yet, in every conversation" },
    waiting: { ...int, description: "conversations where an agent is still answering" },
  }, required: ["unread", "waiting"] },
  AgentOk: { type: "object", description: "`read`, `delete`; agent-remote's `ask`", properties: { ok: { type: "boolean", enum: [true] } }, required: ["ok"] },
  JsonRpcRequest: { type: "object", description: "a JSON-RPC 2.0 request (with `id`) or notification (without)", properties: {
    jsonrpc: { type: "string", enum: ["2.0"] },
    id: { oneOf: [str, int] },
    method: { ...str, description: "initialize, notifications/initialized, ping, tools/list, tools/call" },
    params: { type: "object", additionalProperties: true, description: "tools/call: {name, arguments}" },
  }, required: ["jsonrpc", "method"] },
  JsonRpcResponse: { type: "object", description: "a JSON-RPC 2.0 response: `result` or `error`", properties: {
    jsonrpc: { type: "string", enum: ["2.0"] },
    id: { oneOf: [{ ...str, nullable: true }, int], description: "the request's; null when the request could not be read" },
    result: { type: "object", additionalProperties: true, description: "tools/list: {tools: [{name, description, inputSchema}]}; tools/call: {content: [{type: \"text\", text}], isError} where `text` is the tool's answer as JSON (an API error {status, message, details, needs, errors} when isError)" },
    error: { type: "object", properties: { code: int, message: str, data: {} }, required: ["code", "message"] },
  }, required: ["jsonrpc"] },
};

const LIVE = (event: string, props: string) => `- \`${event}\` {type, run, agent${props}}`;
const EVENTS = `Server-Sent Events of one conversation (\`operation=events&uuid=…\`); each event's \`data\` is JSON:
- \`state\`: the conversation as \`get\` answers it (AgentConversation), first and whenever the stored conversation changes
${LIVE("working", "")}: a run started in this process
${LIVE("text", ", delta")}: the reply's text as it streams from the provider
${LIVE("step", ", step")}: one tool call (AgentStep)
${LIVE("done", ", message")}: the reply (AgentMessage)
${LIVE("failed", ", error")}
The stream ends once no run is working. Comment lines (\`: keep-alive\`) every 20 s keep an idle stream open.`;

/** The `/api/v1/agent-chat` path item, for a caller whose team is `team`. */
function chatPath(team: string[]): Record<string, unknown> {
  const answers = (list: string[]) => ({ oneOf: list.map((n) => envelope(ref(n))) });
  const teamText = `The agents this caller may ask: ${team.map((id) => `@${id}`).join(", ")}.`;
  const notFound = error("RESOURCE_NOT_FOUND: no conversation of the caller has this uuid");
  const denied = error("ACCESS_DENIED: the caller holds chat-<agent> for no agent, or the text @mentions an agent the caller may not ask (`needs` names its chat-<agent>)");
  return {
    get: {
      tags: TAGS, operationId: "resd:agents.chat_read",
      summary: "Read conversations with agents: list, get, unread, or events (text/event-stream)",
      description: `${teamText} post, read and delete change something and are POST only (405 as GET).`,
      parameters: [
        { name: "operation", in: "query", required: true, schema: { type: "string", enum: READS } },
        { name: "uuid", in: "query", required: false, schema: str, description: "the conversation (get, events)" },
      ],
      responses: {
        "200": {
          description: "list: AgentConversationList; get: AgentConversation; unread: AgentUnread; events: a stream",
          content: {
            "application/json": { schema: answers(["AgentConversationList", "AgentConversation", "AgentUnread"]) },
            "text/event-stream": { schema: { ...str, description: EVENTS } },
          },
        },
        ...errors(400, 401), "403": denied, "404": notFound, ...errors(405),
      },
    },
    post: {
      tags: TAGS, operationId: "resd:agents.chat",
      summary: "Conversations with agents: list, get, unread, post (ask), read (mark read), delete",
      description: `${teamText} A post goes to the agents its text @mentions, else to the agent last involved in the conversation, else to the default agent; each addressed agent counts as one AI call against RESD_AI_RATE. The reply comes later (get, or events).`,
      requestBody: { required: true, content: { "application/json": { schema: { type: "object", properties: {
        operation: { type: "string", enum: POSTS },
        uuid: { ...str, description: "the conversation (get, read, delete; post to an existing one — without it, post starts a new conversation)" },
        text: { type: "string", minLength: 1, maxLength: MAX_TEXT, description: `post: the message (trimmed; not empty, at most ${MAX_TEXT} characters)` },
      }, required: ["operation"] } } } },
      responses: {
        "200": {
          description: "list: AgentConversationList; get, post: AgentConversation; unread: AgentUnread; read, delete: {ok: true}",
          content: { "application/json": { schema: answers(["AgentConversationList", "AgentConversation", "AgentUnread", "AgentOk"]) } },
        },
        ...errors(400, 401), "403": denied, "404": notFound,
        "409": error("CONFLICT: an agent the message is for is still answering in this conversation; wait for its reply"),
        "422": error(`INVALID_DATA: \`text\` is missing, empty or longer than ${MAX_TEXT} characters (\`errors.text\`)`),
        "429": error("TOO_MANY_REQUESTS (`Retry-After`): the caller's AI calls per hour (RESD_AI_RATE) are used up"),
      },
    },
  };
}

/** The `/api/v1/agent-remote` path item; `own`: this site's own agents the caller may ask. */
function remotePath(own: string[]): Record<string, unknown> {
  const ask = { type: "object", title: "ask", description: "start a run of this site's agent for someone of the hub (once per run id: asking again answers the same)", properties: {
    operation: { type: "string", enum: ["ask"] },
    conversation: { type: "string", pattern: RUN_ID, description: "the hub's conversation" },
    owner: { type: "string", maxLength: 200, description: "who asks at the hub" },
    agent: { type: "string", pattern: AGENT_ID.source, description: `an agent of this site (not a remote one); the caller needs its chat-<agent>. This caller may ask: ${own.join(", ") || "none"}` },
    run: { type: "string", pattern: RUN_ID, description: "the hub's run id" },
    message: { type: "string", minLength: 1, maxLength: MAX_TEXT, description: "the question" },
    may_act: { type: "boolean", description: `the run may write (only when the caller also holds ${AGENT_ACT})` },
    messages: { type: "array", maxItems: MAX_EARLIER, description: "earlier messages of the conversation", items: { type: "object", properties: { from: { type: "string", maxLength: 64, description: "`user` or an agent's id" }, text: { type: "string", maxLength: MAX_TEXT } }, required: ["from", "text"] } },
  }, required: ["operation", "conversation", "owner", "agent", "run", "message"] };
  const updates = { type: "object", title: "updates", description: "what the runs this caller asked for did since a time", properties: {
    operation: { type: "string", enum: ["updates"] },
    since: { type: "number", minimum: 0, description: "milliseconds, this site's clock: the `now` of the last answer" },
  }, required: ["operation"] };
  const now = ms("this site's time (the next `since`)");
  return {
    post: {
      tags: TAGS, operationId: "resd:agents.remote", security: BEARER_ONLY,
      summary: "Another site (the hub) asks this site's agents: ask, then poll updates (needs agent-remote; bearer token only)",
      requestBody: { required: true, content: { "application/json": { schema: { oneOf: [ask, updates] } } } },
      responses: {
        "200": { description: "ask: {ok: true, now}; updates: {updates, now}", content: { "application/json": { schema: { oneOf: [
          envelope({ type: "object", properties: { ok: { type: "boolean", enum: [true] }, now }, required: ["ok", "now"] }),
          envelope({ type: "object", properties: { now, updates: { type: "array", items: { type: "object", properties: {
            type: { type: "string", enum: ["reply", "failed", "notice"], description: "reply: the agent's answer; failed: why the run failed; notice: a step it took" },
            agent: str, run: str, text: str,
          }, required: ["type", "agent", "run", "text"] } } }, required: ["updates", "now"] }),
        ] } } } },
        ...errors(400, 401),
        "403": error("ACCESS_DENIED: the caller holds no agent-remote, or not the chat-<agent> of the agent asked (`needs`)"),
        "404": error("RESOURCE_NOT_FOUND: this site has no agent of that id of its own"),
        "409": error("CONFLICT: that agent is still answering in this conversation"),
        "422": error(`INVALID_DATA: \`message\` is empty or longer than ${MAX_TEXT} characters`),
      },
    },
  };
}

/** The `/api/v1/mcp` path item, for a caller `p`. */
function mcpPath(p: Principal): Record<string, unknown> {
  const writes = TOOLS.filter((t) => t.writes).map((t) => t.name);
  const reads = TOOLS.filter((t) => !t.writes).map((t) => t.name);
  const mine = toolsFor(p).map((t) => t.name);
  const rpcError = (description: string) => ({ description, content: { "application/json": { schema: ref("JsonRpcResponse") } } });
  return {
    post: {
      tags: TAGS, operationId: "resd:agents.mcp", security: BEARER_ONLY,
      summary: "The Model Context Protocol (streamable HTTP, stateless): JSON-RPC 2.0 over POST, for external agents (bearer token only)",
      description: `tools/list names the tools and their arguments; tools/call runs one with the caller's rights (the same checks, validation and history as the API). Tools: ${reads.join(", ")}; write tools ${writes.join(", ")} are listed and run only for callers holding ${AGENT_ACT}. This caller gets: ${mine.join(", ")}. The request's Accept header must list both application/json and text/event-stream (else 406); the answer is JSON.`,
      parameters: [
        { name: "Mcp-Protocol-Version", in: "header", required: false, schema: str, description: "the protocol version negotiated by initialize" },
      ],
      requestBody: { required: true, content: { "application/json": { schema: { oneOf: [ref("JsonRpcRequest"), { type: "array", items: ref("JsonRpcRequest") }] } } } },
      responses: {
        "200": { description: "the JSON-RPC response (a list for a batch); a refused tool call is a result with isError", content: { "application/json": { schema: { oneOf: [ref("JsonRpcResponse"), { type: "array", items: ref("JsonRpcResponse") }] } } } },
        "202": { description: "notifications only: accepted, no body" },
        "400": { description: "INVALID_DATA (the body is no JSON), or a JSON-RPC parse error (-32700, -32600)", content: { "application/json": { schema: { oneOf: [ref("Error"), ref("JsonRpcResponse")] } } } },
        ...errors(401),
        "406": rpcError("Accept lists not both application/json and text/event-stream (JSON-RPC error -32000)"),
        "415": rpcError("Content-Type is not application/json (JSON-RPC error -32000)"),
      },
    },
  };
}

/**
 * Adds the agents' paths `p` may use, and their schemas to `schemas`; true when it added any.
 * `tokens`: the caller has or can get a bearer token (agent-remote and MCP take nothing else).
 */
export function agentsPaths(site: Site, p: Principal, paths: Record<string, unknown>, schemas: Record<string, Schema>, tokens: boolean): boolean {
  if (p.kind !== "user") return false;
  const before = Object.keys(paths).length;
  const all = roster(site);
  const mine = teamOf(site, p, all);
  if (mine.size) paths["/api/v1/agent-chat"] = chatPath([...mine.keys()]);
  if (tokens && hasPermission(p, AGENT_REMOTE)) {
    const own = [...mine].filter(([, a]) => !a.home).map(([id]) => id);
    paths["/api/v1/agent-remote"] = remotePath(own);
  }
  if (tokens) paths["/api/v1/mcp"] = mcpPath(p);
  if (Object.keys(paths).length === before) return false;
  Object.assign(schemas, SCHEMAS);
  return true;
}

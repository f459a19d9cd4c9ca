/**
 * The agents' endpoints in the per-caller OpenAPI document, black-box: agent-chat for callers with
 * chat-<agent>, agent-remote for agent-remote, mcp for any user with a bearer token; each document
 * valid, and the statuses the server answers described.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import SwaggerParser from "@apidevtools/swagger-parser";
import { adminSite } from "./helpers/site";
import { call, tokenFor } from "./helpers/access";

const notes = { fields: { title: { type: "text" } } };
const CHAT = "/api/v1/agent-chat";
const REMOTE = "/api/v1/agent-remote";
const MCP = "/api/v1/mcp";

type Op = { operationId: string; tags: string[]; security?: unknown[]; description?: string; parameters?: { name: string; schema: { enum?: string[] } }[]; requestBody?: any; responses: Record<string, any> };
type Doc = { paths: Record<string, Record<string, Op>>; tags: { name: string }[]; components: { schemas: Record<string, any>; responses: Record<string, any> } };

let s: Awaited<ReturnType<typeof adminSite>>;
const tokens: Record<string, string> = {};

async function userWith(name: string, permissions: string[], api = true): Promise<void> {
  const role = await s.apiJson("POST", "/api/v1/roles", { name, permissions });
  const roleId = Object.keys(role.body!.roles)[0];
  const user = await s.apiJson("POST", "/api/v1/users", { email: `${name}@example.com`, password: `${name}-password`, role: roleId, api });
  expect(user.status).toBe(201);
  if (api) tokens[name] = await tokenFor(s.base, `${name}@example.com`, `${name}-password`);
}

async function docOf(token: string): Promise<Doc> {
  const r = await call(s.base, "GET", "/api/v1/openapi.json", { token });
  expect(r.status).toBe(200);
  const doc = r.body as unknown as Doc;
  await valid(doc);
  return doc;
}

/** A real validator, and no error under Redocly's recommended rules (as test/openapi-client.test.ts asks of every document). */
async function valid(doc: Doc): Promise<void> {
  await SwaggerParser.validate(structuredClone(doc) as never);
  const { createConfig, lintFromString, stringifyYaml } = await import("@redocly/openapi-core");
  const problems = await lintFromString({ source: stringifyYaml(doc), absoluteRef: "openapi.yaml", config: await createConfig({ extends: ["recommended"] }) });
  expect(problems.filter((p) => p.severity === "error").map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`)).toEqual([]);
}

const agentPaths = (doc: Doc) => Object.keys(doc.paths).filter((p) => [CHAT, REMOTE, MCP].includes(p)).sort();

beforeAll(async () => {
  // The default agent `resd` exists with an AI provider; this one is never contacted.
  s = await adminSite({ defs: { notes }, env: { AI_API_KEY: "x", AI_BASE_URL: "http://127.0.0.1:9/v1" } });
  tokens.admin = s.token;
  await userWith("chatter", ["chat-resd", "view-notes"]);
  await userWith("remote", ["agent-remote"]);
  await userWith("plain", ["view-notes"]);
  await userWith("pagechatter", ["chat-resd"], false);
});
afterAll(async () => {
  await s.cleanup();
});

describe("who sees the agents' endpoints", () => {
  test("the admin: all three, valid, with their operations and the tag resd:agents", async () => {
    const doc = await docOf(tokens.admin);
    expect(agentPaths(doc)).toEqual([CHAT, REMOTE, MCP].sort());
    expect(Object.keys(doc.paths[CHAT]).sort()).toEqual(["get", "post"]);
    expect(Object.keys(doc.paths[REMOTE])).toEqual(["post"]);
    expect(Object.keys(doc.paths[MCP])).toEqual(["post"]);
    expect(doc.paths[CHAT].get.operationId).toBe("resd:agents.chat_read");
    expect(doc.paths[CHAT].post.operationId).toBe("resd:agents.chat");
    expect(doc.paths[REMOTE].post.operationId).toBe("resd:agents.remote");
    expect(doc.paths[MCP].post.operationId).toBe("resd:agents.mcp");
    expect(doc.tags.map((t) => t.name)).toContain("resd:agents");
    // agent-remote and MCP take a bearer token only.
    expect(doc.paths[REMOTE].post.security).toEqual([{ bearerAuth: [] }]);
    expect(doc.paths[MCP].post.security).toEqual([{ bearerAuth: [] }]);
    expect(doc.paths[CHAT].post.security).toBeUndefined();
  });

  test("a user with only chat-resd: agent-chat and mcp, no agent-remote", async () => {
    const doc = await docOf(tokens.chatter);
    expect(agentPaths(doc)).toEqual([CHAT, MCP].sort());
    expect(doc.paths[CHAT].post.description).toContain("@resd");
    // Without agent-act, MCP's write tools are not this caller's.
    expect(doc.paths[MCP].post.description).toMatch(/This caller gets: list_records, read_record, list_resources, translate, find_pages, find_files\./);
  });

  test("a user with agent-remote: agent-remote and mcp, no agent-chat", async () => {
    const doc = await docOf(tokens.remote);
    expect(agentPaths(doc)).toEqual([REMOTE, MCP].sort());
  });

  test("a user with neither chat-* nor agent-remote: mcp only (any token user's)", async () => {
    const doc = await docOf(tokens.plain);
    expect(agentPaths(doc)).toEqual([MCP]);
    expect(JSON.stringify(doc)).not.toContain("AgentConversation");
  });

  test("a page user without API access (session cookie): agent-chat, but no token-only endpoint", async () => {
    const login = await call(s.base, "POST", "/api/v1/session", { body: { email: "pagechatter@example.com", password: "pagechatter-password" } });
    expect(login.status).toBe(200);
    const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0];
    const r = await call(s.base, "GET", "/api/v1/openapi.json", { headers: { cookie } });
    expect(r.status).toBe(200);
    const doc = r.body as unknown as Doc;
    await valid(doc);
    expect(agentPaths(doc)).toEqual([CHAT]);
  });

  test("anonymous: no document at all (401), so none of the three", async () => {
    const r = await call(s.base, "GET", "/api/v1/openapi.json");
    expect(r.status).toBe(401);
    expect(JSON.stringify(r.body)).not.toContain("agent");
    expect(JSON.stringify(r.body)).not.toContain("/api/v1/mcp");
  });
});

describe("the shapes", () => {
  test("agent-chat: the operations as enums, the conversation's schema, 405 for GET writes, 409/422/429 for a post", async () => {
    const doc = await docOf(tokens.admin);
    const get = doc.paths[CHAT].get;
    const op = get.parameters!.find((p) => p.name === "operation")!;
    expect(op.schema.enum).toEqual(["list", "get", "unread", "events"]);
    expect(Object.keys(get.responses["200"].content).sort()).toEqual(["application/json", "text/event-stream"]);
    for (const e of ["state", "working", "text", "step", "done", "failed"]) expect(get.responses["200"].content["text/event-stream"].schema.description).toContain(`\`${e}\``);
    expect(get.responses["405"]).toEqual({ $ref: "#/components/responses/E405" });
    expect(doc.components.responses.E405.description).toContain("METHOD_NOT_ALLOWED");
    const post = doc.paths[CHAT].post;
    const body = post.requestBody.content["application/json"].schema;
    expect(body.properties.operation.enum).toEqual(["list", "get", "unread", "post", "read", "delete"]);
    expect(body.properties.text.maxLength).toBe(8000);
    expect(body.required).toEqual(["operation"]);
    for (const code of ["400", "401", "403", "404", "409", "422", "429"]) expect(post.responses).toHaveProperty([code]);
    expect(post.responses["409"].description).toContain("CONFLICT");
    expect(post.responses["422"].description).toContain("8000");
    expect(post.responses["429"].description).toContain("RESD_AI_RATE");
    const conv = doc.components.schemas.AgentConversation;
    expect(conv.required).toEqual(["uuid", "title", "team", "messages", "working"]);
    expect(doc.components.schemas.AgentConversationList.required).toEqual(["conversations", "team"]);
  });

  test("agent-remote: ask and updates, at most 60 earlier messages, 404 for an unknown agent", async () => {
    const doc = await docOf(tokens.admin);
    const post = doc.paths[REMOTE].post;
    const [ask, updates] = post.requestBody.content["application/json"].schema.oneOf;
    expect(ask.properties.operation.enum).toEqual(["ask"]);
    expect(ask.required).toEqual(["operation", "conversation", "owner", "agent", "run", "message"]);
    expect(ask.properties.messages.maxItems).toBe(60);
    expect(ask.properties.agent.description).toContain("resd");
    expect(updates.properties.operation.enum).toEqual(["updates"]);
    for (const code of ["400", "401", "403", "404", "409", "422"]) expect(post.responses).toHaveProperty([code]);
  });

  test("mcp: a JSON-RPC request in, a JSON-RPC answer out; every tool named, the write tools behind agent-act", async () => {
    const doc = await docOf(tokens.admin);
    const post = doc.paths[MCP].post;
    expect(post.requestBody.content["application/json"].schema.oneOf[0]).toEqual({ $ref: "#/components/schemas/JsonRpcRequest" });
    expect(post.responses["200"].content["application/json"].schema.oneOf[0]).toEqual({ $ref: "#/components/schemas/JsonRpcResponse" });
    for (const t of ["list_records", "read_record", "create_record", "update_record", "delete_record", "restore_record", "list_resources", "translate", "find_pages", "find_files"]) {
      expect(post.description).toContain(t);
    }
    expect(post.description).toContain("agent-act");
    expect(post.responses["401"]).toEqual({ $ref: "#/components/responses/E401" });
  });
});

describe("what the server answers is what the document says", () => {
  test("agent-chat, agent-remote and mcp: each status seen is described for its operation", async () => {
    const doc = await docOf(tokens.admin);
    const seen: string[] = [];
    const missing: string[] = [];
    const check = async (method: string, path: string, opts: Parameters<typeof call>[3]) => {
      const r = await call(s.base, method, path, opts);
      const op = doc.paths[path.split("?")[0]][method.toLowerCase()];
      seen.push(`${method} ${path} ${r.status}`);
      if (!(String(r.status) in op.responses)) missing.push(`${method} ${path}: ${r.status}`);
      return r;
    };
    const chat = (who: string, body: unknown) => check("POST", CHAT, { token: tokens[who], body });
    expect((await check("GET", `${CHAT}?operation=list`, { token: tokens.chatter })).status).toBe(200);
    expect((await check("GET", `${CHAT}?operation=nope`, { token: tokens.chatter })).status).toBe(400);
    expect((await check("GET", `${CHAT}?operation=post`, { token: tokens.chatter })).status).toBe(405);
    expect((await check("GET", `${CHAT}?operation=list`, {})).status).toBe(401);
    expect((await check("GET", `${CHAT}?operation=get&uuid=00000000-0000-0000-0000-000000000000`, { token: tokens.chatter })).status).toBe(404);
    expect((await chat("chatter", { operation: "unread" })).status).toBe(200);
    expect((await chat("chatter", { operation: "post", text: "  " })).status).toBe(422);
    expect((await chat("chatter", { operation: "post", text: "x".repeat(8001) })).status).toBe(422);
    expect((await chat("plain", { operation: "list" })).status).toBe(403);
    expect((await chat("chatter", { operation: "read", uuid: "nope" })).status).toBe(404);
    const remote = (body: unknown, token = tokens.admin) => check("POST", REMOTE, { token, body });
    expect((await remote({ operation: "updates", since: 0 })).status).toBe(200);
    expect((await remote({ operation: "nope" })).status).toBe(400);
    expect((await remote({ operation: "updates" }, tokens.plain)).status).toBe(403);
    expect((await remote({ operation: "ask", agent: "nobody", conversation: "c1", owner: "o", run: "r1", message: "hi" })).status).toBe(404);
    expect((await remote({ operation: "ask", agent: "resd", conversation: "c1", owner: "o", run: "r1", message: "" })).status).toBe(422);
    expect((await check("POST", REMOTE, { body: { operation: "updates" } })).status).toBe(401);
    const rpc = { jsonrpc: "2.0", id: 1, method: "tools/list" };
    const accept = { accept: "application/json, text/event-stream" };
    const listed = await check("POST", MCP, { token: tokens.plain, body: rpc, headers: accept });
    expect(listed.status).toBe(200);
    expect(listed.body).toMatchObject({ jsonrpc: "2.0", id: 1 });
    expect((listed.body!.result.tools as { name: string }[]).map((t) => t.name)).not.toContain("create_record");
    expect((await check("POST", MCP, { body: rpc, headers: accept })).status).toBe(401);
    expect((await check("POST", MCP, { token: tokens.plain, body: rpc })).status).toBe(406);
    expect((await check("POST", MCP, { token: tokens.plain, body: { jsonrpc: "2.0", method: "notifications/initialized" }, headers: accept })).status).toBe(202);
    expect((await check("POST", MCP, { token: tokens.plain, body: { nope: true }, headers: accept })).status).toBe(400);
    expect(seen.length).toBe(21);
    expect(missing).toEqual([]);
  });
});

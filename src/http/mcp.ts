/**
 * `/api/v1/mcp`: the agents' tools (core/agents/tools.ts) for external agents over the Model
 * Context Protocol (streamable HTTP, the official SDK), stateless: every request is answered by a
 * server made for its caller, who must send a bearer token and whose rights every tool call has.
 * Write tools are listed and run only for callers with `agent-act`. See docs/agents.md.
 */
import { Elysia } from "elysia";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import type { Principal } from "../core/access/permissions";
import { callTool, toolsFor } from "../core/agents/tools";
import { unauthorized } from "../core/errors";
import type { Site } from "../core/site";
import { version } from "../build/version";
import { handle, type Ctx } from "./context";

/** What history names as the agent of changes made over MCP (no agent file may take the id: `mcp` is a reserved name). */
const MCP_AGENT = "mcp";

function serverFor(site: Site, p: Principal): Server {
  const server = new Server({ name: "resd", version }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: toolsFor(p).map((t) => ({ name: t.name, description: t.description, inputSchema: t.parameters })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    // Changes are in history as made through an MCP client (`via: "mcp"`), like an agent's through its id.
    const answer = await callTool({ site, p: { ...p, agent: MCP_AGENT } }, req.params.name, req.params.arguments ?? {});
    const body = answer.ok ? answer.result : { error: answer.error };
    return { content: [{ type: "text", text: JSON.stringify(body) }], isError: !answer.ok };
  });
  return server;
}

async function mcp(c: Ctx): Promise<Response> {
  // External agents sign in with a token; a page's session cookie is no way in.
  if (!c.request.headers.has("authorization")) throw unauthorized("the MCP endpoint needs `Authorization: Bearer <token>` (resd token EMAIL, or POST /api/v1/auth/token)");
  const p = await c.principal();
  if (p.kind !== "user") throw unauthorized("the MCP endpoint needs a user's bearer token");
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await serverFor(c.site, p).connect(transport);
  const parsedBody = c.request.method === "POST" ? await c.json() : undefined;
  return transport.handleRequest(c.request, parsedBody === undefined ? {} : { parsedBody });
}

export const mcpRoutes = (site: Site) =>
  new Elysia({ name: "mcp" }).all("/api/v1/mcp", ({ request }) => handle(site, request, mcp), { parse: "none" });

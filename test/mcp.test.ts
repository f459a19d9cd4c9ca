/**
 * /api/v1/mcp, black-box: the official SDK's client over streamable HTTP lists the agents' tools and
 * calls them with a user's bearer token, with exactly that user's rights.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { adminSite } from "./helpers/site";
import { call, tokenFor } from "./helpers/access";

const notes = { fields: { title: { type: "text", required: true }, status: { type: "select", options: { new: "New", done: "Done" } }, secret: { type: "text" } }, hidden: "secret" };
const tasks = { fields: { title: { type: "text" } } };
const READ_TOOLS = ["list_records", "read_record", "list_resources", "translate", "find_pages", "find_files"];
const WRITE_TOOLS = ["create_record", "update_record", "delete_record", "restore_record"];

let s: Awaited<ReturnType<typeof adminSite>>;
let reader = "";
let actor = "";

async function connectAs(token: string | null): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${s.base}/api/v1/mcp`), token ? { requestInit: { headers: { authorization: `Bearer ${token}` } } } : {});
  const client = new Client({ name: "resd-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

type ToolText = { content: { type: string; text: string }[]; isError?: boolean };
const parsed = (r: unknown) => JSON.parse((r as ToolText).content[0].text) as Record<string, any>;

async function userWith(name: string, permissions: string[]): Promise<string> {
  const role = await s.apiJson("POST", "/api/v1/roles", { name, permissions });
  const roleId = Object.keys(role.body!.roles)[0];
  await s.apiJson("POST", "/api/v1/users", { email: `${name}@example.com`, password: `${name}-password`, role: roleId, api: true });
  return tokenFor(s.base, `${name}@example.com`, `${name}-password`);
}

beforeAll(async () => {
  s = await adminSite({ defs: { notes, tasks } });
  await s.apiJson("POST", "/api/v1/notes/n1", { title: "First", status: "new", secret: "hush" });
  await s.apiJson("POST", "/api/v1/tasks/t1", { title: "A task" });
  reader = await userWith("reader", ["view-notes"]);
  actor = await userWith("actor", ["view-notes", "edit-notes", "agent-act"]);
});
afterAll(async () => {
  await s.cleanup();
});

describe("/api/v1/mcp", () => {
  test("without a bearer token: 401, and the SDK's client cannot connect", async () => {
    const r = await call(s.base, "POST", "/api/v1/mcp", { body: { jsonrpc: "2.0", id: 1, method: "tools/list" }, headers: { accept: "application/json, text/event-stream" } });
    expect(r.status).toBe(401);
    expect(r.body!.message).toBe("UNAUTHORIZED");
    await expect(connectAs(null)).rejects.toThrow();
    await expect(connectAs("not-a-token")).rejects.toThrow();
  });

  test("an admin (agent-act through (all)) gets every tool, with its fixed name and arguments", async () => {
    const client = await connectAs(s.token);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([...READ_TOOLS, ...WRITE_TOOLS].sort());
    const list = tools.find((t) => t.name === "list_records")!;
    expect(Object.keys(list.inputSchema.properties ?? {}).sort()).toEqual(["filter", "limit", "offset", "resource", "search", "sort"]);
    expect(list.inputSchema.required).toEqual(["resource"]);
    expect(Object.keys(tools.find((t) => t.name === "update_record")!.inputSchema.properties ?? {}).sort()).toEqual(["changes", "resource", "uuid"]);
    await client.close();
  });

  test("list, read, create, update, delete and restore work as the API does, hidden fields never shown", async () => {
    const client = await connectAs(s.token);
    const listed = parsed(await client.callTool({ name: "list_records", arguments: { resource: "notes", filter: "status:new" } }));
    expect(listed.total).toBe(1);
    expect(listed.records.n1.title).toBe("First");
    expect(JSON.stringify(listed)).not.toContain("hush");
    const made = await client.callTool({ name: "create_record", arguments: { resource: "notes", record: { title: "Made by an agent", status: "new" } } });
    expect((made as ToolText).isError).toBe(false);
    const uuid = parsed(made).uuid as string;
    const got = await s.apiJson("GET", `/api/v1/notes/${uuid}`);
    expect(got.body!.notes[uuid].title).toBe("Made by an agent");
    const changed = parsed(await client.callTool({ name: "update_record", arguments: { resource: "notes", uuid, changes: { status: "done" } } }));
    expect(changed.status).toBe("done");
    expect(changed.title).toBe("Made by an agent");
    parsed(await client.callTool({ name: "delete_record", arguments: { resource: "notes", uuid } }));
    expect((await s.apiJson("GET", `/api/v1/notes/${uuid}`)).status).toBe(404);
    const back = parsed(await client.callTool({ name: "restore_record", arguments: { resource: "notes", uuid } }));
    expect(back.status).toBe("done");
    // The writes are in the record's history, under the token's user.
    const history = await s.apiJson("GET", `/api/v1/notes/${uuid}/history`);
    expect(history.body!.history.map((e: { action: string }) => e.action)).toEqual(["create", "update", "delete", "restore"]);
    // …each change marked as made through an MCP client (the creation is the record as it was first stored).
    expect(history.body!.history.map((e: { via?: string }) => e.via ?? null)).toEqual([null, "mcp", "mcp", "mcp"]);
    const resources = parsed(await client.callTool({ name: "list_resources", arguments: {} }));
    expect(Object.keys(resources.resources).sort()).toEqual(expect.arrayContaining(["notes", "tasks"]));
    expect(Object.keys(resources.resources.notes.fields)).not.toContain("secret");
    await client.close();
  });

  test("without agent-act the write tools are neither listed nor run; refusals come back as the API's errors", async () => {
    const client = await connectAs(reader);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([...READ_TOOLS].sort());
    const write = await client.callTool({ name: "update_record", arguments: { resource: "notes", uuid: "n1", changes: { title: "No" } } });
    expect((write as ToolText).isError).toBe(true);
    expect(parsed(write).error).toMatchObject({ status: 403, message: "ACCESS_DENIED", needs: ["agent-act"] });
    expect((await s.apiJson("GET", "/api/v1/notes/n1")).body!.notes.n1.title).toBe("First");
    // A resource the user may not view: the same 403 as GET /api/v1/tasks.
    const other = await client.callTool({ name: "list_records", arguments: { resource: "tasks" } });
    expect((other as ToolText).isError).toBe(true);
    expect(parsed(other).error.status).toBe(403);
    expect(parsed(other).error.needs).toContain("view-tasks");
    await client.close();
  });

  test("with agent-act a user still writes only what the user may: edit yes, delete and other resources no; invalid values 422", async () => {
    const client = await connectAs(actor);
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(WRITE_TOOLS));
    const ok = await client.callTool({ name: "update_record", arguments: { resource: "notes", uuid: "n1", changes: { title: "Edited by an agent" } } });
    expect((ok as ToolText).isError).toBe(false);
    const got = await s.apiJson("GET", "/api/v1/notes/n1");
    expect(got.body!.notes.n1.title).toBe("Edited by an agent");
    expect(got.body!.notes.n1._modified_by).not.toBe(got.body!.notes.n1._created_by);
    const del = await client.callTool({ name: "delete_record", arguments: { resource: "notes", uuid: "n1" } });
    expect(parsed(del).error).toMatchObject({ status: 403, message: "ACCESS_DENIED" });
    const bad = await client.callTool({ name: "update_record", arguments: { resource: "notes", uuid: "n1", changes: { status: "nonsense" } } });
    expect(parsed(bad).error).toMatchObject({ status: 422, message: "INVALID_DATA" });
    expect(Object.keys(parsed(bad).error.errors)).toEqual(["status"]);
    const unknown = await client.callTool({ name: "drop_database", arguments: {} });
    expect(parsed(unknown).error.status).toBe(400);
    await client.close();
  });
});

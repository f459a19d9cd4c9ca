/**
 * Internal endpoints of the admin pages (spec "Endpoints" rule 12): `.resources`, `empty-resource`,
 * `.system-messages`, `.deleted/{resource}`, `.files-usage`, `.files-unused`, `openai/translate` and
 * `openai/complete`. Permission-checked like every other endpoint; their
 * shapes are resd's own (docs/admin.md) and are listed in the OpenAPI document.
 */
import { Elysia } from "elysia";
import { describeResources } from "../core/admin/describe";
import { emptyRecord } from "../core/admin/empty-record";
import { systemMessages } from "../core/admin/system-messages";
import { badRequest, methodNotAllowed, unauthorized } from "../core/errors";
import { deletedRecords } from "../core/records/service";
import { complete, translate } from "../core/ai/assist";
import { fileUsage, unusedFiles } from "../core/files/usage";
import { findFile, metaDef } from "../core/files/library";
import { asObject } from "../core/validation/object";
import { publicRecord } from "../core/records/output";
import type { Site } from "../core/site";
import { handle, type Ctx } from "./context";
import { json } from "./envelope";

const NO_STORE = { "cache-control": "no-store" };

function onlyPost(c: Ctx) {
  if (c.request.method !== "POST") throw methodNotAllowed("POST");
}

function onlyGet(c: Ctx) {
  if (c.request.method !== "GET" && c.request.method !== "HEAD") throw methodNotAllowed("GET");
}

async function signedIn(c: Ctx) {
  const p = await c.principal();
  if (p.kind !== "user") throw unauthorized("sign in to use the admin endpoints");
  return p;
}

export const adminApiRoutes = (site: Site) =>
  new Elysia({ name: "admin-api" })
    .all("/api/v1/.resources", ({ request }) => handle(site, request, async (c) => {
      onlyGet(c);
      const p = await signedIn(c);
      const resources = await describeResources(c.site, p);
      const user = { uuid: p.uuid, email: p.email, role: p.role, admin: p.permissions.has("(all)") };
      const settings = { map_tiles: c.site.config.mapTiles || null };
      return json(200, { count: Object.keys(resources).length, user, permissions: [...p.permissions].sort(), settings, resources }, c.t0, NO_STORE);
    }), { parse: "none" })
    .all("/api/v1/empty-resource", ({ request }) => handle(site, request, async (c) => {
      onlyGet(c);
      const resource = c.url().searchParams.get("resource");
      if (!resource) throw badRequest("name the resource: ?resource=<name>");
      const { def, values } = emptyRecord(c.site, await signedIn(c), resource);
      return json(200, { resource: def.name, record: values }, c.t0, NO_STORE);
    }), { parse: "none" })
    .all("/api/v1/.system-messages", ({ request }) => handle(site, request, async (c) => {
      onlyGet(c);
      const messages = await systemMessages(c.site, await signedIn(c));
      return json(200, { count: messages.length, messages }, c.t0, NO_STORE);
    }), { parse: "none" })
    .all("/api/v1/.deleted/:resource", ({ request, params }) => handle(site, request, async (c) => {
      onlyGet(c);
      const entries = await deletedRecords(c.site, await c.principal(), params.resource);
      return json(200, { count: entries.length, deleted: entries }, c.t0, NO_STORE);
    }), { parse: "none" })
    .all("/api/v1/.files-usage", ({ request }) => handle(site, request, async (c) => {
      onlyGet(c);
      const uuid = c.url().searchParams.get("uuid") ?? "";
      const usage = await fileUsage(c.site, await c.principal(), uuid);
      return json(200, { count: usage.length, uuid, usage }, c.t0, NO_STORE);
    }), { parse: "none" })
    .all("/api/v1/.files-unused", ({ request }) => handle(site, request, async (c) => {
      onlyGet(c);
      const md5s = await unusedFiles(c.site, await c.principal());
      const def = metaDef(c.site);
      const files: Record<string, unknown> = {};
      for (const md5 of md5s) files[md5] = publicRecord(def, await findFile(c.site, md5));
      return json(200, { count: md5s.length, files }, c.t0, NO_STORE);
    }), { parse: "none" })
    .all("/api/v1/openai/translate", ({ request }) => handle(site, request, async (c) => {
      onlyPost(c);
      const r = await translate(c.site, await c.principal(), asObject(await c.json()));
      return json(200, r, c.t0, NO_STORE);
    }), { parse: "none" })
    .all("/api/v1/openai/complete", ({ request }) => handle(site, request, async (c) => {
      onlyPost(c);
      const r = await complete(c.site, await c.principal(), asObject(await c.json()));
      return json(200, r, c.t0, NO_STORE);
    }), { parse: "none" });

/** The `.pages` operations of the OpenAPI document, for the callers who may use them (see openapi-doc.ts). */
import type { Principal } from "../core/access/permissions";
import { DEFAULT_LIMIT, MAX_LIMIT, mayListPages, mayManagePages, mayViewPageFiles } from "../core/pages/service";
import type { Site } from "../core/site";

type Schema = Record<string, unknown>;
const TAGS = ["resd:admin"];
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const errors = (...codes: number[]) => Object.fromEntries(codes.map((c) => [String(c), { $ref: `#/components/responses/E${c}` }]));

const PAGE: Schema = {
  type: "object",
  description: "one page: kind route (a route file), endpoint (an extension's route) or record (a record page of a sitemap.url template)",
  properties: {
    id: { type: "string", description: "md5 hex of the URL path" },
    url: { type: "string" },
    kind: { type: "string", enum: ["route", "endpoint", "record"] },
    file: { type: "string", description: "route, endpoint: the file, relative to the site folder" },
    allows: { type: "array", description: "route: its allow tags", items: { type: "object", properties: { operation: { type: "string" }, resource: { type: "string" } } } },
    size: { type: "integer", description: "route: bytes" },
    methods: { type: "array", items: { type: "string" }, description: "endpoint" },
    resource: { type: "string", description: "record" },
    uuid: { type: "string", description: "record" },
    title: { type: "string", nullable: true, description: "record" },
    language: { type: "string", nullable: true, description: "record" },
    published: { type: "boolean", description: "record" },
    _modified: { type: "integer", description: "seconds since the epoch (route: the file's modification time)" },
    text: { type: "string", description: "route, when read one by one or written: the file's text" },
  },
  required: ["id", "url", "kind"],
};
const answer = (description: string, extra: Schema = {}) => ({
  description,
  content: { "application/json": { schema: { allOf: [ref("Envelope"), { type: "object", properties: { pages: { type: "object", additionalProperties: PAGE }, ...extra } }] } } },
});
const idParam = { name: "id", in: "path", required: true, schema: { type: "string", pattern: "^[0-9a-f]{32}$" }, description: "md5 hex of the URL path" };
const body = (properties: Schema, required: string[]) => ({ required: true, content: { "application/json": { schema: { type: "object", properties, required } } } });
const TEXT = { type: "string", maxLength: 65536, description: "the route file's text (at most 64 KiB); every [#api-allow <operation> <resource>#] must name a resource and an operation (get, post, put, delete) that take effect in this file" };

/** Adds the `.pages` paths the caller may use; true when it added any. */
export function pagesPaths(site: Site, p: Principal, paths: Record<string, Record<string, unknown>>): boolean {
  if (p.kind === "anonymous" || !mayListPages(site, p)) return false;
  const manage = mayManagePages(p);
  const list = {
    get: {
      tags: TAGS, operationId: "resd:pages.list",
      summary: `The site's pages in URL order: route files and endpoints${mayViewPageFiles(p) ? "" : " (needs view-.pages)"}, record pages of the resources the caller may view`,
      parameters: [
        { name: "kind", in: "query", schema: { type: "string", enum: ["route", "endpoint", "record"] } },
        { name: "resource", in: "query", schema: { type: "string" }, description: "record pages of this resource only" },
        { name: "search", in: "query", schema: { type: "string" }, description: "part of the URL or title, any case" },
        { name: "limit", in: "query", schema: { type: "integer", minimum: 0, maximum: MAX_LIMIT, default: DEFAULT_LIMIT } },
        { name: "offset", in: "query", schema: { type: "integer", minimum: 0 } },
      ],
      responses: { "200": answer("pages keyed by id; `total` counts every match", { total: { type: "integer" } }), ...errors(400, 401, 403) },
    },
    ...(manage ? {
      post: {
        tags: TAGS, operationId: "resd:pages.create", summary: "Create a route file DIR/ext/uri/<url>/index.tpl (needs manage-.pages)",
        requestBody: body({ url: { type: "string", maxLength: 512, description: "URL path such as /contact" }, text: TEXT }, ["url", "text"]),
        responses: { "201": answer("the route file"), ...errors(400, 401, 403, 409, 422) },
      },
    } : {}),
  };
  paths["/api/v1/.pages"] = list;
  paths["/api/v1/.pages/{id}"] = {
    parameters: [idParam],
    get: { tags: TAGS, operationId: "resd:pages.read", summary: "One page; a route file with its text", responses: { "200": answer("the page"), ...errors(401, 403, 404) } },
    ...(manage ? {
      put: { tags: TAGS, operationId: "resd:pages.replace", summary: "Replace a route file's text (needs manage-.pages)", requestBody: body({ text: TEXT }, ["text"]), responses: { "200": answer("the route file"), ...errors(400, 401, 403, 404, 422) } },
      delete: { tags: TAGS, operationId: "resd:pages.delete", summary: "Delete a route file and the folders it leaves empty (needs manage-.pages)", responses: { "200": answer("the route file as it was"), ...errors(401, 403, 404) } },
    } : {}),
  };
  if (mayViewPageFiles(p)) {
    paths["/api/v1/.pages/{id}/history"] = {
      parameters: [idParam],
      get: {
        tags: TAGS, operationId: "resd:pages.history", summary: "A route file's history, oldest first; `record` holds {url, text} (needs view-.pages)",
        responses: { "200": { description: "history", content: { "application/json": { schema: { allOf: [ref("Envelope"), { type: "object", properties: { history: { type: "array", items: ref("HistoryEntry") }, users: { type: "object" } } }] } } } }, ...errors(401, 403, 404) },
      },
    };
  }
  if (manage) {
    paths["/api/v1/.pages/{id}/restore"] = {
      parameters: [idParam],
      post: {
        tags: TAGS, operationId: "resd:pages.restore", summary: "Bring back a deleted route file, or with `entry` put it back to that history entry (needs manage-.pages)",
        requestBody: { required: false, content: { "application/json": { schema: { type: "object", properties: { entry: { type: "integer" } } } } } },
        responses: { "200": answer("the route file as restored"), ...errors(400, 401, 403, 404, 409, 422) },
      },
    };
  }
  return true;
}

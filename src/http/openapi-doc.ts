/**
 * The OpenAPI 3.0.3 document of one caller: only the resources and operations the caller may use,
 * schemas from the definitions' field types, hidden fields left out of every record schema.
 * Built per request (it is small and callers differ); nothing here reads the database.
 */
import { can, hasPermission, type Action, type Principal } from "../core/access/permissions";
import { selfEditFields } from "../core/access/write-guard";
import type { FieldDef, ResourceDef } from "../core/definitions/types";
import type { Site } from "../core/site";
import { version } from "../build/version";
import { mayUseAi } from "../core/ai/provider";
import { pagesPaths } from "./pages-openapi";
import { gitPaths } from "./git";
import { REALTIME_TAG, realtimePaths } from "./realtime-openapi";
import { AGENTS_TAG, agentsPaths } from "./agents-openapi";
import { ACCOUNT_TAG, accountPaths } from "./account-openapi";
import { TWO_FACTOR_TAG, twoFactorPaths } from "./account-2fa-openapi";

type Schema = Record<string, unknown>;
type Operation = Record<string, unknown>;
/** A path item: operations by method, plus shared `parameters`. */
type PathItem = Record<string, unknown>;

/**
 * Names of built-in operations and tags carry "resd:", which no resource name can hold (letters,
 * digits, _ and -), and resource operations are `{resource}.{verb}` (no resource name holds a dot):
 * a resource called `files`, `token` or `auth` never collides with anything.
 */
const AUTH_TAG = "resd:auth";
const FILES_TAG = "resd:files";
const ADMIN_TAG = "resd:admin";

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const errorRefs = (...codes: number[]) => Object.fromEntries(codes.map((c) => [String(c), { $ref: `#/components/responses/E${c}` }]));
/** Component names allow letters, digits, `.`, `-` and `_` only, which resource names respect. */
const schemaName = (resource: string, kind: "record" | "input") => `${resource}.${kind}`;

function scalarSchema(f: FieldDef, def: ResourceDef, name: string): Schema {
  const s: Schema = {};
  if (f.name) s.description = f.name;
  switch (f.type) {
    case "number": {
      s.type = "number";
      const lon = Object.values(def.fields).some((o) => o.type === "location-picker" && o.longitude_field === name);
      if (lon) Object.assign(s, { minimum: -180, maximum: 180 });
      if (typeof f.min === "number") s.minimum = f.min;
      if (typeof f.max === "number") s.maximum = f.max;
      return s;
    }
    case "location-picker": return { ...s, type: "number", minimum: -90, maximum: 90 };
    case "boolean": return { ...s, type: "boolean" };
    case "email": return { ...s, type: "string", format: "email" };
    case "url": return { ...s, type: "string", format: "uri" };
    case "date": return { ...s, type: "string", description: `${f.name ?? name} (YYYY-MM-DD or ISO 8601 date-time)` };
    case "color": return { ...s, type: "string", pattern: "^#(?:[0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$" };
    case "password": return { ...s, type: "string", format: "password", writeOnly: true };
    case "group": return { ...s, type: "object", additionalProperties: true };
    case "select":
      if (f.options) return { ...s, type: "string", enum: Object.keys(f.options) };
      if (f.resource) return { ...s, type: "string", description: `uuid or name of a record of ${f.resource}` };
      return { ...s, type: "string" };
    case "image":
    case "file":
    case "upload":
    case "gallery":
      return { ...s, type: "string", description: `${f.name ?? name}: uuid of a file in the media library` };
    default:
      return { ...s, type: "string" };
  }
}

function fieldSchema(def: ResourceDef, name: string): Schema {
  const f = def.fields[name];
  let s = scalarSchema(f, def, name);
  if (f.multi || f.type === "gallery") s = { type: "array", items: s };
  else if (f.type === "group") s = { oneOf: [s, { type: "array", items: { type: "object", additionalProperties: true } }] };
  if (f.i18n) {
    const langs = def.raw.languages ?? [];
    s = { type: "object", properties: Object.fromEntries(langs.map((l) => [l, s])), additionalProperties: false, description: "one value per language" };
  }
  return s;
}

const SYSTEM_PROPS: Record<string, Schema> = {
  uuid: { type: "string" },
  _created: { type: "integer", description: "seconds since the epoch" },
  _modified: { type: "integer", description: "seconds since the epoch" },
  _created_by: { type: "string", nullable: true, description: "uuid of the user who created the record" },
  _modified_by: { type: "string", nullable: true, description: "uuid of the user who last changed the record" },
};

/** What a read returns: visible fields plus system fields. */
function recordSchema(def: ResourceDef): Schema {
  const props: Record<string, Schema> = { ...SYSTEM_PROPS };
  for (const name of Object.keys(def.fields)) if (!def.hidden.has(name)) props[name] = fieldSchema(def, name);
  // Every answer carries the system fields (the two `_by` as null when no user wrote).
  return { type: "object", properties: props, required: Object.keys(SYSTEM_PROPS) };
}

/**
 * What a write accepts. Write-only fields (hidden ones such as a user's password or `api`) may be
 * sent, so they appear here, marked writeOnly; they never appear in a record schema.
 */
function inputSchema(def: ResourceDef, only?: string[]): Schema {
  const props: Record<string, Schema> = { uuid: { type: "string", description: "optional identifier on create; without one the server makes a UUIDv7 (time-ordered)" } };
  // A record read back may be sent as it is: the server ignores its system fields.
  for (const k of ["_created", "_modified", "_created_by", "_modified_by"]) props[k] = { ...SYSTEM_PROPS[k], description: "ignored (set by the server)" };
  for (const name of Object.keys(def.fields)) {
    if (only && !only.includes(name)) continue;
    const f = def.fields[name];
    let schema = fieldSchema(def, name);
    // A required translated field needs at least one language.
    if (f.required && f.i18n) schema = { ...schema, minProperties: 1 };
    props[name] = def.hidden.has(name) ? { ...schema, writeOnly: true } : schema;
  }
  const required = only ? [] : Object.entries(def.fields).filter(([, f]) => f.required).map(([n]) => n);
  // The server answers 422 for a field the definition does not have: clients are as strict.
  return { type: "object", properties: props, additionalProperties: false, ...(required.length ? { required } : {}) };
}

const recordsResponse = (key: string, schema: string, description: string) => ({
  description,
  content: { "application/json": { schema: { allOf: [ref("Envelope"), { type: "object", properties: { [key]: { type: "object", additionalProperties: ref(schema) } } }] } } },
});

const jsonBody = (schema: Schema) => ({ required: true, content: { "application/json": { schema } } });
/** The server's rule for a record's uuid (src/core/records/prepare.ts). */
const uuidParam = { name: "uuid", in: "path", required: true, schema: { type: "string", pattern: "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$" } };
const LIST_PARAMS = [
  { name: "limit", in: "query", schema: { type: "integer", minimum: 0 }, description: "maximum number of records" },
  { name: "offset", in: "query", schema: { type: "integer", minimum: 0 }, description: "starting offset" },
  { name: "sort", in: "query", schema: { type: "string" }, description: "comma-separated `field|order` or `field|flag|order`" },
  { name: "filter", in: "query", schema: { type: "string" }, description: "comma-separated `field:value`; `!` negates, `||` means or" },
  { name: "search", in: "query", schema: { type: "string" } },
];

/** Preconditions of a write to one record (docs/records.md, "Conditional writes (412)"); bulk writes take none. */
const PRECONDITION_PARAMS = [
  { name: "If-Match", in: "header", required: false, schema: { type: "string" }, description: "the record's ETag from a read or a write (compared on its opaque part, `W/` ignored), or `*` (the record must exist): otherwise 412 and nothing is written" },
  { name: "If-Unmodified-Since", in: "header", required: false, schema: { type: "string" }, description: "an HTTP date: 412 when the record changed after it (to the second); ignored when If-Match is sent or the value is not an HTTP date" },
];
const PRECONDITION_FAILED = { "412": { $ref: "#/components/responses/PreconditionFailed" } };
/** A successful write's answer carries the new version's validators, for the next conditional write. */
const withValidators = (response: Record<string, unknown>) => ({
  ...response, headers: { ETag: HEADER("the written record's entity tag (for If-Match)"), "Last-Modified": HEADER("the time of the write, to the second; the previous second when it is the current one") },
});

function resourcePaths(p: Principal, def: ResourceDef, paths: Record<string, PathItem>) {
  const r = def.name;
  const rec = schemaName(r, "record");
  const may = (a: Action) => can(p, r, a);
  const tags = [r];
  const coll: PathItem = {};
  const one: PathItem = { parameters: [uuidParam] };
  if (may("view")) {
    const notModified = { "304": { $ref: "#/components/responses/NotModified" } };
    coll.get = { tags, summary: `List ${r}`, operationId: `${r}.list`, parameters: LIST_PARAMS, responses: { "200": recordsResponse(r, rec, "records keyed by uuid"), ...notModified, ...errorRefs(400, 401, 403, 404, 429, 503) } };
    one.get = { tags, summary: `Read one of ${r}`, operationId: `${r}.read`, responses: { "200": recordsResponse(r, rec, "one record keyed by uuid"), ...notModified, ...errorRefs(401, 403, 404) } };
  }
  if (may("create")) {
    const body = jsonBody(ref(schemaName(r, "input")));
    coll.post = { tags, summary: `Create one of ${r}`, operationId: `${r}.create`, requestBody: body, responses: { "201": recordsResponse(r, rec, "RESOURCE_CREATED"), ...errorRefs(400, 401, 403, 409, 422) } };
    one.post = { tags, summary: `Create one of ${r} with this uuid`, operationId: `${r}.create_with_uuid`, requestBody: body, responses: { "201": recordsResponse(r, rec, "RESOURCE_CREATED"), ...errorRefs(400, 401, 403, 409, 422) } };
  }
  const selfOnly = r === "users" && p.kind === "user" && !may("edit");
  if (may("edit") || selfOnly) {
    const schema = selfOnly ? inputSchema(def, selfEditFields(def)) : { ...inputSchema(def), required: undefined };
    const op = (id: string) => ({
      tags, operationId: id, requestBody: jsonBody(schema), parameters: PRECONDITION_PARAMS,
      summary: selfOnly ? "Change your own user record (only the fields below)" : `Change fields of one of ${r}`,
      responses: { "200": withValidators(recordsResponse(r, rec, "RESOURCE_UPDATED")), ...errorRefs(400, 401, 403, 404, 422), ...PRECONDITION_FAILED },
    });
    one.put = op(`${r}.update`);
    one.patch = op(`${r}.patch`);
    if (!selfOnly) {
      coll.put = {
        tags, summary: `Change several records of ${r}`, operationId: `${r}.bulk_update`,
        requestBody: jsonBody({ type: "object", additionalProperties: schema }),
        responses: { "200": recordsResponse(r, rec, "RESOURCE_UPDATED"), ...errorRefs(400, 401, 403, 404, 422) },
      };
    }
  }
  if (may("delete")) one.delete = { tags, summary: `Delete one of ${r}`, operationId: `${r}.delete`, parameters: PRECONDITION_PARAMS, responses: { "200": recordsResponse(r, rec, "RESOURCE_DELETED"), ...errorRefs(401, 403, 404), ...PRECONDITION_FAILED } };
  if (may("delete_all")) coll.delete = { tags, summary: `Delete every record of ${r}`, operationId: `${r}.delete_all`, responses: { "200": { description: "RESOURCE_DELETED", content: { "application/json": { schema: ref("Envelope") } } }, ...errorRefs(401, 403) } };
  if (Object.keys(coll).length) paths[`/api/v1/${r}`] = coll;
  if (Object.keys(one).length > 1) paths[`/api/v1/${r}/{uuid}`] = one;
  if (may("export")) {
    paths[`/api/v1/${r}/export`] = { get: {
      tags, summary: `Export ${r}`, operationId: `${r}.export`,
      parameters: [{ name: "format", in: "query", schema: { type: "string", enum: ["json", "csv", "tsv"], default: "json" } }],
      responses: { "200": { description: "file download", content: {
        "application/json": { schema: { type: "object", description: "records keyed by uuid, and the definition under _meta", properties: { _meta: { type: "object" } }, additionalProperties: ref(rec) } },
        "text/csv": { schema: { type: "string" } }, "text/tab-separated-values": { schema: { type: "string" } },
      } }, ...errorRefs(400, 401, 403) },
    } };
  }
  if (may("view")) {
    paths[`/api/v1/${r}/{uuid}/history`] = { parameters: [uuidParam], get: {
      tags, summary: `History of one of ${r}, oldest first`, operationId: `${r}.history`,
      responses: { "200": { description: "entries {id, action, at, user, record}; `users` names each entry's user (e-mail only for callers who may view users)", content: { "application/json": { schema: { allOf: [ref("Envelope"), { type: "object", properties: { history: { type: "array", items: ref("HistoryEntry") }, users: { type: "object", additionalProperties: { type: "object", properties: { name: { type: "string", nullable: true }, email: { type: "string" } }, required: ["name"] } } } }] } } } }, ...errorRefs(401, 403, 404) },
    } };
  }
  if (may("edit") && may("create")) {
    paths[`/api/v1/${r}/{uuid}/restore`] = { parameters: [uuidParam], post: {
      tags, summary: `Restore a deleted record of ${r}, or roll one back to a history entry`, operationId: `${r}.restore`,
      requestBody: { required: false, content: { "application/json": { schema: { type: "object", properties: { entry: { type: "integer", description: "history entry id; without it, the state before the deletion" } } } } } },
      responses: { "200": recordsResponse(r, rec, "RESOURCE_UPDATED"), ...errorRefs(400, 401, 403, 404, 409) },
    } };
  }
  if (may("create") && mayUseAi(p)) {
    paths[`/api/v1/${r}/import-document`] = { post: {
      tags, summary: `Propose field values for a new record of ${r} from a .docx (creates nothing)`, operationId: `${r}.import_document`,
      requestBody: { required: true, content: { "multipart/form-data": { schema: { type: "object", properties: { file: { type: "string", format: "binary" }, title: { type: "string" }, alt: { type: "string", maxLength: 1000, description: "text alternative for images" } }, required: ["file"] } } } },
      responses: { "200": { description: "proposal, rejected, missing, document, model", content: { "application/json": { schema: ref("Envelope") } } }, ...errorRefs(400, 401, 403, 413) },
    } };
  }
  if (may("import")) {
    paths[`/api/v1/${r}/import`] = { post: {
      tags, summary: `Import into ${r}`, operationId: `${r}.import`,
      parameters: [
        { name: "match", in: "query", required: false, description: "how a row finds the record it updates: uuid, none (only create), a unique field, or default (uuid, then id, name, title)", schema: { type: "string" } },
        { name: "strict", in: "query", required: false, description: "1: all or nothing (422 when a row is rejected)", schema: { type: "string", enum: ["1", "true", "yes", "0", "false", "no"] } },
        { name: "missing_files", in: "query", required: false, description: "allow: image/file values need not name an uploaded file yet", schema: { type: "string", enum: ["allow"] } },
      ],
      requestBody: { required: true, content: { "multipart/form-data": { schema: { type: "object", properties: { file: { type: "string", format: "binary" }, title: { type: "string" }, alt: { type: "string", maxLength: 1000, description: "text alternative for images" } }, required: ["file"] } } } },
      responses: { "200": { description: "import statistics and the rows that failed", content: { "application/json": { schema: { allOf: [ref("Envelope"), { type: "object", properties: {
        stats: ref("ImportStats"),
        errors_detail: { type: "array", description: "the first 1,000 failing rows", items: { type: "object", properties: { row: { type: "integer" }, field: { type: "string", nullable: true }, reason: { type: "string" }, uuid: { type: "string" } }, required: ["row", "field", "reason"] } },
        format: { type: "string" }, resource_created: { type: "boolean" },
      } }] } } } }, ...errorRefs(400, 401, 403, 413, 422) },
    } };
  }
}

function filePaths(p: Principal, paths: Record<string, PathItem>, publicMedia: boolean) {
  const may = (a: Action) => can(p, ".files", a);
  const tags = [FILES_TAG];
  const resp = (d: string) => ({ description: d, content: { "application/json": { schema: { allOf: [ref("Envelope"), { type: "object", properties: { files: { type: "object", additionalProperties: ref("FileMeta") } } }] } } } });
  const coll: PathItem = {};
  const one: PathItem = { parameters: [uuidParam] };
  if (may("view")) {
    coll.get = { tags, summary: "List files", operationId: "resd:files.list", responses: { "200": resp("metadata keyed by uuid"), ...errorRefs(401, 403) } };
    one.get = { tags, summary: "Metadata of one file", operationId: "resd:files.read", responses: { "200": resp("metadata of one file"), ...errorRefs(401, 403, 404) } };
  }
  if (may("create")) {
    coll.post = {
      tags, summary: "Upload a file", operationId: "resd:files.upload",
      requestBody: { required: true, content: { "multipart/form-data": { schema: { type: "object", properties: { file: { type: "string", format: "binary" }, title: { type: "string" }, alt: { type: "string", maxLength: 1000, description: "text alternative for images" } }, required: ["file"] } } } },
      responses: { "201": resp("RESOURCE_CREATED"), ...errorRefs(400, 401, 403, 413) },
    };
  }
  if (may("edit")) one.put = { tags, summary: "Change file metadata", operationId: "resd:files.update", requestBody: jsonBody({ type: "object", properties: { title: { type: "string" }, name: { type: "string" }, alt: { type: "string", maxLength: 1000, description: "text alternative for images" } }, additionalProperties: false }), responses: { "200": resp("RESOURCE_UPDATED"), ...errorRefs(400, 401, 403, 404, 422) } };
  if (may("delete")) one.delete = { tags, summary: "Delete a file, its metadata and resized copies", operationId: "resd:files.delete", responses: { "200": resp("RESOURCE_DELETED"), ...errorRefs(401, 403, 404) } };
  if (Object.keys(coll).length) paths["/api/v1/.files"] = coll;
  if (Object.keys(one).length > 1) paths["/api/v1/.files/{uuid}"] = one;
  if (publicMedia || may("view")) {
    const security = publicMedia ? [] : undefined;
    paths["/img/{uuid}/{spec}"] = { get: {
      tags, summary: "An image resized, as WebP (never enlarged)", operationId: "resd:files.image", security,
      parameters: [uuidParam, { name: "spec", in: "path", required: true, schema: { type: "string", pattern: "^[1-9][0-9]*(x[1-9][0-9]*[fc]|[wh])$" }, description: "`{W}x{H}f` fit, `{W}x{H}c` crop, `{W}w` width, `{H}h` height" }],
      responses: { "200": { description: "the image", content: { "image/webp": { schema: { type: "string", format: "binary" } } } }, "304": { description: "not modified" }, ...errorRefs(400, 404), "415": { description: "not an image, or too large to decode" } },
    } };
    paths["/download/{uuid}"] = { get: {
      tags, summary: "The file as uploaded (ranges supported)", operationId: "resd:files.download", security,
      parameters: [uuidParam],
      responses: { "200": { description: "the file, with its stored type", content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } } }, "206": { description: "a byte range", content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } } }, "304": { description: "not modified" }, ...errorRefs(404) },
    } };
  }
}

const TOKEN_RESPONSE = { description: "a bearer token", content: { "application/json": { schema: { allOf: [ref("Envelope"), ref("Token")] } } } };

/** The admin pages' internal endpoints (docs/admin.md): for signed-in users and token holders. */
function adminPaths(p: Principal, paths: Record<string, PathItem>) {
  if (p.kind !== "user") return;
  const envelope = (description: string, props: Record<string, Schema>) => ({
    description, content: { "application/json": { schema: { allOf: [ref("Envelope"), { type: "object", properties: props }] } } },
  });
  const get = (operationId: string, summary: string, response: ReturnType<typeof envelope>, extra: Record<string, unknown> = {}, errors = [401]) =>
    ({ get: { tags: [ADMIN_TAG], operationId, summary, ...extra, responses: { "200": response, ...errorRefs(...errors) } } });
  paths["/api/v1/.resources"] = get("resd:admin.resources", "The definitions the caller may view, with labels, columns, filters, actions and the caller's rights resolved",
    envelope("resources by name", { user: { type: "object" }, permissions: { type: "array", items: { type: "string" } }, resources: { type: "object", additionalProperties: { type: "object" } } }));
  paths["/api/v1/empty-resource"] = get("resd:admin.empty_record", "The values a new record's form starts from (needs create-{resource})",
    envelope("starting values", { resource: { type: "string" }, record: { type: "object" } }),
    { parameters: [{ name: "resource", in: "query", required: true, schema: { type: "string" } }] }, [400, 401, 403, 404]);
  paths["/api/v1/.system-messages"] = get("resd:admin.system_messages", "What an administrator should act on (empty for callers without (all))",
    envelope("messages", { messages: { type: "array", items: { type: "object", properties: { level: { type: "string" }, topic: { type: "string" }, text: { type: "string" }, at: { type: "integer" } } } } }));
  paths["/api/v1/.deleted/{resource}"] = get("resd:admin.deleted_records", "Records deleted within 90 days and not restored, newest first (needs view-{resource})",
    envelope("deleted records", { deleted: { type: "array", items: ref("HistoryEntry") } }),
    { parameters: [{ name: "resource", in: "path", required: true, schema: { type: "string" } }] }, [401, 403, 404]);
  if (can(p, ".files", "view")) paths["/api/v1/.files-usage"] = get("resd:admin.files_usage", "Records (in resources the caller may view) whose image, file, upload, gallery or html fields name the file (needs view-.files)",
    envelope("usage", { uuid: { type: "string" }, usage: { type: "array", items: { type: "object", properties: { resource: { type: "string" }, uuid: { type: "string" }, fields: { type: "array", items: { type: "string" } } } } } }),
    { parameters: [{ name: "uuid", in: "query", required: true, schema: { type: "string" } }] }, [401, 403, 404]);
  if (can(p, ".files", "view")) paths["/api/v1/.files-unused"] = get("resd:admin.files_unused", "Files no record names (needs view-.files)",
    envelope("files by uuid", { files: { type: "object", additionalProperties: ref("FileMeta") } }), {}, [401, 403]);
  const ai = (operationId: string, summary: string, body: Record<string, Schema>, required: string[], answer: Record<string, Schema>) => ({
    post: {
      tags: [ADMIN_TAG], operationId, summary,
      requestBody: jsonBody({ type: "object", properties: body, required }),
      responses: { "200": envelope("result", answer), ...errorRefs(400, 401, 403, 404, 429), "502": { description: "BAD_GATEWAY: the AI provider failed" }, "503": { description: "SERVICE_UNAVAILABLE: no AI provider configured" } },
    },
  });
  const target = { resource: { type: "string" }, field: { type: "string" }, uuid: { type: "string", description: "the record being edited (edit-{resource}); without it create-{resource} is needed. Both endpoints need create-.ai first" } };
  if (mayUseAi(p)) {
    paths["/api/v1/openai/translate"] = ai("resd:admin.translate", "Translate an i18n field's value into the resource's other languages (guided by ai_prompts; counts against RESD_AI_RATE)",
      { ...target, from: { type: "string" }, to: { type: "array", items: { type: "string" } }, text: { type: "string", maxLength: 20000 } }, ["resource", "field", "text"],
      { from: { type: "string" }, translations: { type: "object", additionalProperties: { type: "string" } } });
    paths["/api/v1/openai/complete"] = ai("resd:admin.complete", "Write a field's value from a prompt (counts against RESD_AI_RATE)",
      { ...target, prompt: { type: "string", maxLength: 20000 }, text: { type: "string", description: "the current value" } }, ["resource", "field", "prompt"],
      { text: { type: "string" } });
  }
}

function authPaths(): Record<string, PathItem> {
  return {
    "/api/v1/auth/token": {
      post: {
        tags: [AUTH_TAG], summary: "Request a bearer token", operationId: "resd:auth.create_token", security: [],
        requestBody: jsonBody({ type: "object", properties: { email: { type: "string" }, password: { type: "string", format: "password" }, code: { type: "string", description: "a user with two-factor sign-in: a code or recovery code (without it 401 with `two_factor: true`)" } }, required: ["email", "password"] }),
        responses: { "200": TOKEN_RESPONSE, ...errorRefs(400, 401, 403, 429) },
      },
      get: { tags: [AUTH_TAG], summary: "Renew the bearer token", operationId: "resd:auth.renew_token", security: [{ bearerAuth: [] }], responses: { "200": TOKEN_RESPONSE, ...errorRefs(401) } },
    },
  };
}

const envelopeProps = {
  code: { type: "integer" }, success: { type: "boolean" }, status: { type: "string", enum: ["ok", "error"] },
  count: { type: "integer" }, total: { type: "integer" }, message: { type: "string" },
  memory_usage: { type: "string" }, execution_time: { type: "string" },
};

const ERROR_TEXT: Record<number, string> = {
  400: "INVALID_DATA: malformed request", 401: "UNAUTHORIZED or INVALID_CREDENTIALS", 403: "ACCESS_DENIED (`needs` lists granting permissions)",
  404: "RESOURCE_NOT_FOUND", 405: "METHOD_NOT_ALLOWED (`allow` names the methods the path or operation takes)", 408: "REQUEST_TIMEOUT: the request body did not arrive in time (RESD_BODY_TIMEOUT, RESD_BODY_MIN_RATE); the connection is closed", 409: "RESOURCE_EXISTS", 413: "UPLOAD_TOO_LARGE", 416: "RANGE_NOT_SATISFIABLE", 422: "INVALID_DATA: a value fails validation",
  429: "TOO_MANY_REQUESTS (`Retry-After`): too many attempts, AI calls, or list queries of this caller at once (RESD_MAX_QUERIES_PER_CALLER)",
  503: "SERVICE_UNAVAILABLE (`Retry-After`): the database is held by another writer, a query ran past its time budget, a queue is full, or too many request bodies are arriving at once (RESD_MAX_BODIES)",
};

const HEADER = (description: string) => ({ description, schema: { type: "string" } });
const NOT_MODIFIED = {
  description: "not modified: the caller holds the current version (If-None-Match or If-Modified-Since); no body",
  headers: { "Last-Modified": HEADER("the time of the last change, to the second"), ETag: HEADER("weak entity tag; changes with every write") },
};

const PRECONDITION_FAILED_RESPONSE = {
  description: "PRECONDITION_FAILED: the record changed since the version If-Match or If-Unmodified-Since names (or, on an upsert resource, does not exist); nothing was written",
  headers: { ETag: HEADER("the current version's entity tag (absent when the record does not exist)") },
  content: { "application/json": { schema: { allOf: [ref("Error"), { type: "object", properties: {
    _modified: { type: "integer", description: "the current version's time, seconds since the epoch" },
    _modified_by: { type: "string", nullable: true, description: "uuid of the user who wrote the current version" },
  } }] } } },
};

/**
 * Statuses every operation of a kind can answer, added to what each operation lists itself: any
 * request with a malformed target or query gets 400, any JSON or upload body may be too large (413)
 * or too slow (408) or meet too many bodies arriving at once (503),
 * writes and list queries may meet a busy database or the query budget (503), record reads answer
 * 304. So a generated client knows every status the server sends.
 */
function describeStatuses(paths: Record<string, PathItem>) {
  for (const [path, item] of Object.entries(paths)) {
    for (const [method, raw] of Object.entries(item)) {
      if (method === "parameters" || !raw || typeof raw !== "object") continue;
      const op = raw as { responses: Record<string, unknown>; requestBody?: unknown; security?: unknown[] };
      const add = (code: number) => (op.responses[String(code)] ??= { $ref: `#/components/responses/E${code}` });
      add(400);
      if (!(Array.isArray(op.security) && op.security.length === 0) || path === "/api/v1/auth/token") add(401);
      if (op.requestBody) {
        add(413);
        add(408);
        add(503);
      }
      const api = path.startsWith("/api/v1/");
      if (api && method !== "get") add(503);
      if (path.startsWith("/download/")) add(416);
      if (path.startsWith("/img/")) add(503);
    }
  }
}

/** `git`: what the caller may do with the site's git (core/git's gitAccess, which reads the role). */
export function buildOpenApi(site: Site, p: Principal, serverUrl: string, opts: { tokens: boolean; git?: { view: boolean; pull: boolean } } = { tokens: true }): Record<string, unknown> {
  const paths: Record<string, PathItem> = opts.tokens ? authPaths() : {};
  const schemas: Record<string, Schema> = {
    Envelope: { type: "object", properties: envelopeProps, required: ["code", "success", "status"] },
    Error: {
      type: "object",
      properties: {
        ...envelopeProps, request_id: { type: "string" }, details: { type: "string" },
        needs: { type: "string", description: "comma-separated permissions, any of which grants the operation (403)" },
        errors: { type: "object", additionalProperties: { type: "string" }, description: "field (or path such as sections[1].n) → what is wrong (422)" },
        allow: { type: "string", description: "the methods the path supports (405)" },
      },
      required: ["code", "success", "status", "message", "request_id"],
    },
    Token: { type: "object", properties: { token: { type: "string" }, token_created: { type: "integer" }, token_expires: { type: "integer" } }, required: ["token", "token_created", "token_expires"] },
    ImportStats: { type: "object", properties: {
      ...Object.fromEntries(["imported", "errors", "created", "updated", "total"].map((k) => [k, { type: "integer" }])),
      matched: { type: "object", description: "updated rows per key that found their record (uuid, id, name, title or the match field)", additionalProperties: { type: "integer" } },
    }, required: ["imported", "errors", "created", "updated", "total", "matched"] },
    HistoryEntry: { type: "object", properties: { id: { type: "integer", description: "0: the creation of a record never changed since (also accepted by restore once it has an id of its own)" }, action: { type: "string", enum: ["create", "update", "delete", "restore"] }, at: { type: "integer", description: "milliseconds since the epoch" }, user: { type: "string", nullable: true }, record: { type: "object" } } },
    FileMeta: { type: "object", properties: { uuid: { type: "string" }, name: { type: "string" }, title: { type: "string" }, alt: { type: "string", description: "text alternative (absent until set)" }, type: { type: "string" }, size: { type: "integer" }, width: { type: "integer" }, height: { type: "integer" }, orientation: { type: "string" } } },
  };
  const tags: { name: string; description?: string }[] = opts.tokens ? [{ name: AUTH_TAG, description: "bearer tokens" }] : [];
  for (const def of [...site.defs.values()].sort((a, b) => a.name.localeCompare(b.name))) {
    if (def.internal || def.name.startsWith(".")) continue;
    const before = Object.keys(paths).length;
    resourcePaths(p, def, paths);
    if (Object.keys(paths).length === before) continue;
    schemas[schemaName(def.name, "record")] = recordSchema(def);
    schemas[schemaName(def.name, "input")] = inputSchema(def);
    tags.push({ name: def.name, description: def.raw.name?.plural ?? `records of ${def.name}` });
  }
  const before = Object.keys(paths).length;
  filePaths(p, paths, site.config.publicMedia);
  if (Object.keys(paths).length > before) tags.push({ name: FILES_TAG, description: "media library" });
  if (realtimePaths(site, p, paths)) tags.push({ name: REALTIME_TAG, description: "changes to records as they happen (Server-Sent Events)" });
  if (p.kind === "user") {
    adminPaths(p, paths);
    pagesPaths(site, p, paths);
    gitPaths(paths, opts.git);
    tags.push({ name: ADMIN_TAG, description: "internal endpoints of the admin pages" });
  }
  if (accountPaths(p, paths)) tags.push({ name: ACCOUNT_TAG, description: "password reset, e-mail change, invitations" });
  if (twoFactorPaths(p, paths, schemas, opts.tokens)) tags.push({ name: TWO_FACTOR_TAG, description: "two-factor sign-in, personal API keys" });
  if (agentsPaths(site, p, paths, schemas, opts.tokens)) tags.push({ name: AGENTS_TAG, description: "AI agents: the chat, another site's agents (agent-remote), the Model Context Protocol" });
  describeStatuses(paths);
  const responses: Record<string, unknown> = Object.fromEntries(Object.entries(ERROR_TEXT).map(([c, d]) => [`E${c}`, { description: d, content: { "application/json": { schema: ref("Error") } } }]));
  responses.NotModified = NOT_MODIFIED;
  responses.PreconditionFailed = PRECONDITION_FAILED_RESPONSE;
  const used = referenced(paths, { schemas, responses });
  return {
    openapi: "3.0.3",
    info: {
      title: "resd API",
      version: "1",
      // The records served belong to the site: its operator's terms apply.
      license: { name: "the terms of the site's operator" },
      description: `Generic resource REST interface (resd ${version}). This document lists only what the caller ${p.email ?? ""} may use${hasPermission(p, "(all)") ? " (everything)" : ""}.`,
    },
    servers: [{ url: serverUrl }],
    security: [{ bearerAuth: [] }, { sessionCookie: [] }],
    tags,
    paths,
    components: {
      securitySchemes: {
        bearerAuth: { type: "http", scheme: "bearer", bearerFormat: "JWT" },
        sessionCookie: { type: "apiKey", in: "cookie", name: "resd_session" },
      },
      schemas: pick(schemas, used),
      responses: pick(responses, used),
    },
  };
}

const pick = <T>(all: Record<string, T>, used: Set<string>) => Object.fromEntries(Object.entries(all).filter(([k]) => used.has(k)));

/**
 * Names of the components the caller's operations reach, directly or through other components: a
 * view-only caller's document must not carry the input schema (with write-only field names such as
 * a user's `password`) of an operation it may not use.
 */
function referenced(paths: unknown, components: Record<string, Record<string, unknown>>): Set<string> {
  const used = new Set<string>();
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (!node || typeof node !== "object") return;
    for (const [k, v] of Object.entries(node)) {
      if (k === "$ref" && typeof v === "string") {
        const [, kind, name] = /^#\/components\/(\w+)\/(.+)$/.exec(v) ?? [];
        if (name && !used.has(name)) {
          used.add(name);
          walk(components[kind]?.[name]);
        }
      } else walk(v);
    }
  };
  walk(paths);
  return used;
}

/**
 * The tools AI agents work with, defined once for every door: the agents' chat, another site's
 * agents (agent-remote) and external agents over MCP. Each tool runs as the asker: the same
 * permission checks, validation, history and events as the API call it stands for, never a wider
 * principal. Write tools are offered only to askers who hold `agent-act`.
 *
 * Names and arguments are fixed (prompts, tests and MCP clients rely on them); answers are the
 * API's shapes, and a refusal is the API's error (status, message code, details) for the model.
 */
import { hasPermission, type Principal } from "../access/permissions";
import { describeResources, type FieldView } from "../admin/describe";
import { AppError, badRequest } from "../errors";
import { listFiles } from "../files/library";
import { listPages } from "../pages/service";
import { publicRecord } from "../records/output";
import { createRecord, deleteRecord, listRecords, readRecord, restoreRecord, updateRecord } from "../records/service";
import type { Site } from "../site";
import type { StoredRecord } from "../store/types";
import { asObject } from "../validation/object";
import { translateText } from "../ai/assist";

/** The permission that lets agents write for their asker. */
export const AGENT_ACT = "agent-act";
export const mayAct = (p: Principal) => hasPermission(p, AGENT_ACT);

/** A JSON Schema object, as the model (function calling) and MCP clients read it. */
export type JsonSchema = { type: "object"; properties: Record<string, unknown>; required?: string[]; additionalProperties?: boolean };

export type ToolContext = { site: Site; p: Principal };

export type Tool = {
  name: string;
  description: string;
  parameters: JsonSchema;
  /** Changes records: offered only with `agent-act`. */
  writes: boolean;
  run(ctx: ToolContext, args: Record<string, unknown>): Promise<unknown>;
};

/** What a call answers: the result, or the error the API would have given. */
export type ToolAnswer =
  | { ok: true; result: unknown }
  | { ok: false; error: { status: number; message: string; details?: string; needs?: string[]; errors?: Record<string, string> } };

/** Records a list answers at most (the model reads every one of them). */
export const LIST_MAX = 50;

const str = (description: string) => ({ type: "string", description });
const schema = (properties: Record<string, unknown>, required: string[] = []): JsonSchema => ({ type: "object", properties, required, additionalProperties: false });

function text(args: Record<string, unknown>, key: string, optional = false): string | undefined {
  const v = args[key];
  if (v === undefined || v === null || v === "") {
    if (optional) return undefined;
    throw badRequest(`\`${key}\` is required`);
  }
  if (typeof v !== "string") throw badRequest(`\`${key}\` must be a string`);
  return v;
}

function count(args: Record<string, unknown>, key: string, max: number): string | undefined {
  const v = args[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0) throw badRequest(`\`${key}\` must be a non-negative integer`);
  return String(Math.min(v, max));
}

const one = (site: Site, resource: string, row: StoredRecord) => publicRecord(site.resource(resource), row);

const LIST_RECORDS: Tool = {
  name: "list_records",
  description: `Lists records of a resource, at most ${LIST_MAX} at a time (use offset for more). filter: "field:value" conditions, comma-separated (field:!value negates, a||b either); sort: "field|asc" or "field|desc"; search: text in the searchable fields.`,
  parameters: schema({
    resource: str("the resource's name (see list_resources)"),
    filter: str('e.g. "status:published,year:2024"'),
    sort: str('e.g. "title|asc"'),
    search: str("text to look for"),
    limit: { type: "integer", minimum: 0, maximum: LIST_MAX },
    offset: { type: "integer", minimum: 0 },
  }, ["resource"]),
  writes: false,
  async run({ site, p }, args) {
    const resource = text(args, "resource")!;
    const r = await listRecords(site, p, resource, {
      filter: text(args, "filter", true), sort: text(args, "sort", true), search: text(args, "search", true),
      limit: count(args, "limit", LIST_MAX) ?? String(LIST_MAX), offset: count(args, "offset", Number.MAX_SAFE_INTEGER),
    });
    const records: Record<string, unknown> = {};
    for await (const row of r.rows) records[row.uuid] = publicRecord(r.def, row);
    return { resource, total: r.total, count: Object.keys(records).length, records };
  },
};

const READ_RECORD: Tool = {
  name: "read_record",
  description: "Reads one record.",
  parameters: schema({ resource: str("the resource's name"), uuid: str("the record's uuid") }, ["resource", "uuid"]),
  writes: false,
  async run({ site, p }, args) {
    const { def, row } = await readRecord(site, p, text(args, "resource")!, text(args, "uuid")!);
    return publicRecord(def, row);
  },
};

const CREATE_RECORD: Tool = {
  name: "create_record",
  description: "Creates a record; `record` holds its fields (validated as the API validates them). Answers the record as stored.",
  parameters: schema({ resource: str("the resource's name"), record: { type: "object", description: "the fields", additionalProperties: true } }, ["resource", "record"]),
  writes: true,
  async run({ site, p }, args) {
    const resource = text(args, "resource")!;
    const { row } = await createRecord(site, p, resource, asObject(args.record, "record"));
    return one(site, resource, row);
  },
};

const UPDATE_RECORD: Tool = {
  name: "update_record",
  description: "Changes some fields of a record: `changes` holds only the fields to change. Answers the record as stored.",
  parameters: schema({ resource: str("the resource's name"), uuid: str("the record's uuid"), changes: { type: "object", description: "the fields to change", additionalProperties: true } }, ["resource", "uuid", "changes"]),
  writes: true,
  async run({ site, p }, args) {
    const resource = text(args, "resource")!;
    const { row } = await updateRecord(site, p, resource, text(args, "uuid")!, asObject(args.changes, "changes"));
    return one(site, resource, row);
  },
};

const DELETE_RECORD: Tool = {
  name: "delete_record",
  description: "Deletes a record (it can be restored from its history for 90 days).",
  parameters: schema({ resource: str("the resource's name"), uuid: str("the record's uuid") }, ["resource", "uuid"]),
  writes: true,
  async run({ site, p }, args) {
    const resource = text(args, "resource")!;
    const { row } = await deleteRecord(site, p, resource, text(args, "uuid")!);
    return { deleted: one(site, resource, row) };
  },
};

const RESTORE_RECORD: Tool = {
  name: "restore_record",
  description: "Restores a deleted record, or with `entry` rolls a record back to that entry of its history (0: its creation).",
  parameters: schema({ resource: str("the resource's name"), uuid: str("the record's uuid"), entry: { type: "integer", minimum: 0, description: "a history entry id" } }, ["resource", "uuid"]),
  writes: true,
  async run({ site, p }, args) {
    const resource = text(args, "resource")!;
    const entry = args.entry;
    if (entry !== undefined && entry !== null && !(typeof entry === "number" && Number.isSafeInteger(entry))) throw badRequest("`entry` must be a history entry id (an integer)");
    const { row } = await restoreRecord(site, p, resource, text(args, "uuid")!, (entry ?? undefined) as number | undefined);
    return one(site, resource, row);
  },
};

const LIST_RESOURCES: Tool = {
  name: "list_resources",
  description: "Lists the resources the asker may view, with their fields (name, type, label, required, options) and what the asker may do.",
  parameters: schema({}),
  writes: false,
  async run({ site, p }) {
    const views = await describeResources(site, p);
    const out: Record<string, unknown> = {};
    const field = (f: FieldView, languages: string[]): Record<string, unknown> => ({
      type: f.type, label: f.label,
      ...(f.required ? { required: true } : {}),
      ...(f.multi ? { multi: true } : {}),
      ...(f.i18n ? { languages } : {}),
      ...(f.options?.length ? { options: f.options.map((o) => o.value) } : {}),
      ...(f.resource ? { resource: f.resource } : {}),
    });
    for (const [name, v] of Object.entries(views)) {
      const fields = Object.fromEntries(Object.entries(v.fields).filter(([, f]) => !f.write_only).map(([n, f]) => [n, field(f, v.languages)]));
      out[name] = { label: v.label.plural, can: v.can, fields };
    }
    return { resources: out };
  },
};

const TRANSLATE: Tool = {
  name: "translate",
  description: "Translates a text from one language into others (language codes such as en, de).",
  parameters: schema({ text: str("the text"), from: str("its language"), to: { type: "array", items: { type: "string" }, description: "the languages to translate into" } }, ["text", "from", "to"]),
  writes: false,
  async run({ site, p }, args) {
    const to = args.to;
    if (!Array.isArray(to) || !to.length || !to.every((l) => typeof l === "string")) throw badRequest("`to` must list language codes");
    return translateText(site, p, text(args, "text")!, text(args, "from")!, to as string[]);
  },
};

const FIND_PAGES: Tool = {
  name: "find_pages",
  description: "Finds pages of the site (route files, endpoints, record pages) by a part of their URL or title.",
  parameters: schema({ search: str("part of the URL or title") }, ["search"]),
  writes: false,
  async run({ site, p }, args) {
    const r = await listPages(site, p, { search: text(args, "search")!, limit: String(LIST_MAX) });
    return { total: r.total, pages: r.pages };
  },
};

const FIND_FILES: Tool = {
  name: "find_files",
  description: "Finds files of the media library by a part of their name, title or alt text.",
  parameters: schema({ search: str("part of the name, title or alt text") }, ["search"]),
  writes: false,
  async run({ site, p }, args) {
    const r = await listFiles(site, p, { search: text(args, "search")!, limit: String(LIST_MAX) });
    const files: Record<string, unknown> = {};
    for await (const row of r.rows) files[row.uuid] = publicRecord(r.def, row);
    return { total: r.total, files };
  },
};

export const TOOLS: readonly Tool[] = [LIST_RECORDS, READ_RECORD, CREATE_RECORD, UPDATE_RECORD, DELETE_RECORD, RESTORE_RECORD, LIST_RESOURCES, TRANSLATE, FIND_PAGES, FIND_FILES];

/** The tools offered to an asker: the write tools only with `agent-act`. */
export const toolsFor = (p: Principal): Tool[] => TOOLS.filter((t) => !t.writes || mayAct(p));

/**
 * Runs one tool as the asker. A refusal or an invalid argument is an answer (the model is told and
 * may try otherwise), never a failure of the run; anything else is thrown.
 */
export async function callTool(ctx: ToolContext, name: string, args: unknown): Promise<ToolAnswer> {
  const tool = toolsFor(ctx.p).find((t) => t.name === name);
  try {
    if (!tool) {
      if (TOOLS.some((t) => t.name === name)) throw new AppError(403, "ACCESS_DENIED", `${name} changes records: agents write for you only with ${AGENT_ACT}`, { needs: [AGENT_ACT] });
      throw badRequest(`there is no tool "${name}"; the tools are ${toolsFor(ctx.p).map((t) => t.name).join(", ")}`);
    }
    return { ok: true, result: await tool.run(ctx, asObject(args ?? {}, "the arguments")) };
  } catch (e) {
    if (!(e instanceof AppError) || e.status >= 500) throw e;
    const { needs, errors } = e.extra;
    return { ok: false, error: { status: e.status, message: e.code, ...(e.details ? { details: e.details } : {}), ...(needs ? { needs } : {}), ...(errors ? { errors } : {}) } };
  }
}

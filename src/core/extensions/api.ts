/**
 * The API object an extension's default export receives. It is the whole contract between resd
 * and `DIR/ext/*.ts` files (documented in docs/hooks.md); extensions never import resd's modules,
 * which also keeps them loadable by the compiled binary.
 */
import { AppError, type MessageCode } from "../errors";
import { authorize, can, hasPermission, requirePermission, SYSTEM, ANONYMOUS, type Action, type Principal } from "../access/permissions";
import { createRecord, deleteRecord, listRecords, readRecord, updateRecord } from "../records/service";
import { publicRecord, type ApiRecord } from "../records/output";
import type { ListParams } from "../query/parse";
import type { StoredRecord } from "../store/types";
import type { Site, WriteEvent } from "../site";
import type { JobContext, JobHandler } from "../jobs/worker";
import type { Registry } from "./registry";

/** What a named event's handler receives. */
export type EventPayload = WriteEvent & { event: string };
export type EventHandler = (e: EventPayload) => unknown;

/** One request to an extension route, already authenticated. */
export type RouteRequest = {
  method: string;
  path: string;
  params: Record<string, string>;
  query: URLSearchParams;
  headers: Headers;
  /** The caller (user, or anonymous on a public route). */
  principal: Principal;
  /** The JSON body; {} when empty, 400 INVALID_DATA when unparsable. */
  body(): Promise<unknown>;
  /** The underlying web-standard Request, for anything else (form data, raw bytes). */
  request: Request;
};

/** A reply with a chosen status; any other returned object is sent with 200. */
export type Reply = { readonly __resdReply: true; status: number; body: Record<string, unknown> };
export type RouteResult = Record<string, unknown> | Reply | Response;
export type RouteHandler = (req: RouteRequest) => RouteResult | Promise<RouteResult>;

export type RouteOptions = {
  /** Anyone, anonymous visitors included, may call the route (default: a signed-in caller). */
  public?: boolean;
  /** The caller needs at least one of these permissions (`(all)` always passes). */
  permission?: string | string[];
};

export type ExtensionApi = {
  /** The site directory. */
  dir: string;
  /** Delivers a named event (listed in a definition's `events`) to `handler` after commit. */
  on(event: string, handler: EventHandler): void;
  /** Runs queued `job:<type>` entries; one handler per type. */
  job(type: string, handler: (job: JobContext) => unknown): void;
  /** Adds an endpoint; it gets the same authentication and envelope as the built-in ones. */
  route(method: string, path: string, handler: RouteHandler, options?: RouteOptions): void;
  /** The record interface with the same permission checks, acting as the principal given. */
  records: {
    list(p: Principal, resource: string, params?: ListParams): Promise<{ records: ApiRecord[]; total: number | null }>;
    read(p: Principal, resource: string, uuid: string): Promise<ApiRecord>;
    create(p: Principal, resource: string, fields: Record<string, unknown>, uuid?: string): Promise<ApiRecord>;
    update(p: Principal, resource: string, uuid: string, fields: Record<string, unknown>): Promise<ApiRecord>;
    delete(p: Principal, resource: string, uuid: string): Promise<ApiRecord>;
  };
  /** Throws 403 ACCESS_DENIED (with `needs`) unless the principal may do the action. */
  authorize(p: Principal, resource: string, action: Action, uuid?: string): void;
  can(p: Principal, resource: string, action: Action, uuid?: string): boolean;
  hasPermission(p: Principal, ...names: string[]): boolean;
  requirePermission(p: Principal, ...names: string[]): void;
  /** Full access, for jobs and events that act on the site's own behalf. */
  system: Principal;
  anonymous: Principal;
  /** A reply with a status other than 200, e.g. `reply(201, { thing })`. */
  reply(status: number, body?: Record<string, unknown>): Reply;
  /** An error the envelope shows with the spec's message code, e.g. `error(404, "RESOURCE_NOT_FOUND", "no such thing")`. */
  error(status: number, code: MessageCode, details?: string): AppError;
  log(...args: unknown[]): void;
};

export const isReply = (v: unknown): v is Reply => typeof v === "object" && v !== null && (v as Reply).__resdReply === true;

export function buildApi(site: Site, registry: Registry, file: string): ExtensionApi {
  const one = (def: Parameters<typeof publicRecord>[0], row: StoredRecord) => publicRecord(def, row);
  return {
    dir: site.config.dir,
    on: (event, handler) => registry.on(file, event, handler),
    job: (type, handler) => registry.job(file, type, handler as JobHandler),
    route: (method, path, handler, options) => registry.route(file, method, path, handler, options),
    records: {
      async list(p, resource, params = {}) {
        const r = await listRecords(site, p, resource, params);
        const out: ApiRecord[] = [];
        if (Array.isArray(r.rows)) for (const row of r.rows) out.push(one(r.def, row));
        else for await (const row of r.rows) out.push(one(r.def, row));
        return { records: out, total: r.total };
      },
      read: async (p, resource, uuid) => { const r = await readRecord(site, p, resource, uuid); return one(r.def, r.row); },
      create: async (p, resource, fields, uuid) => { const r = await createRecord(site, p, resource, fields, uuid); return one(r.def, r.row); },
      update: async (p, resource, uuid, fields) => { const r = await updateRecord(site, p, resource, uuid, fields); return one(r.def, r.row); },
      delete: async (p, resource, uuid) => { const r = await deleteRecord(site, p, resource, uuid); return one(r.def, r.row); },
    },
    authorize, can, hasPermission, requirePermission,
    system: SYSTEM,
    anonymous: ANONYMOUS,
    reply: (status, body = {}) => {
      if (!Number.isInteger(status) || status < 200 || status > 599) throw new Error(`reply(${status}): the status must be an HTTP status code`);
      return { __resdReply: true, status, body };
    },
    error: (status, code, details) => new AppError(status, code, details),
    log: (...args) => console.log(`[${file}]`, ...args),
  };
}

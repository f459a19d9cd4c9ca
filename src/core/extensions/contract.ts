/**
 * The contract between resd and `DIR/ext/*.ts` files (documented in docs/hooks.md): what an
 * extension's default export receives and what its handlers get and give. Types only, so the
 * registry and the API builder both stand on it without importing each other.
 */
import type { AppError, MessageCode } from "../errors";
import type { Action, Principal } from "../access/permissions";
import type { ApiRecord } from "../records/output";
import type { ListParams } from "../query/parse";
import type { WriteEvent } from "../site";
import type { JobContext } from "../jobs/worker";

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

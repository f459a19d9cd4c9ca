/**
 * What extensions registered: event handlers, job handlers and routes, each remembered with the
 * file that registered it (error messages name it). One registry per site, filled during start-up
 * and frozen before the server listens.
 */
import type { Site } from "../site";
import type { JobHandler } from "../jobs/worker";
import type { EventHandler, RouteHandler, RouteOptions } from "./contract";

export const ROUTE_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;
export type RouteMethod = (typeof ROUTE_METHODS)[number];

export type RouteEntry = { method: RouteMethod; path: string; handler: RouteHandler; options: RouteOptions; file: string };

/** A start-up problem in one extension; the message names the file. */
export class ExtensionError extends Error {
  constructor(readonly file: string, message: string) {
    super(`${file}: ${message}`);
    this.name = "ExtensionError";
  }
}

const NAME = /^[A-Za-z0-9_.:-]+$/;
const PATH = /^(\/[A-Za-z0-9._~!$&'()*+,;=@%:-]+)+\/?$/;

export class Registry {
  readonly events = new Map<string, { handler: EventHandler; file: string }[]>();
  readonly jobs = new Map<string, { handler: JobHandler; file: string }>();
  readonly routes: RouteEntry[] = [];
  readonly files: string[] = [];
  private frozen = false;

  constructor(private readonly site: Site) {}

  freeze(): void {
    this.frozen = true;
  }

  private open(file: string, what: string): void {
    if (this.frozen) throw new ExtensionError(file, `${what}: registrations are accepted only while the extension starts`);
  }

  on(file: string, event: unknown, handler: unknown): void {
    this.open(file, "on()");
    if (typeof event !== "string" || !NAME.test(event) || event.startsWith("job:")) {
      throw new ExtensionError(file, `on(${JSON.stringify(event)}): an event name is letters, digits, _ . : - (jobs use job(type, handler))`);
    }
    if (typeof handler !== "function") throw new ExtensionError(file, `on("${event}"): the handler must be a function`);
    const list = this.events.get(event) ?? [];
    list.push({ handler: handler as EventHandler, file });
    this.events.set(event, list);
  }

  job(file: string, type: unknown, handler: unknown): void {
    this.open(file, "job()");
    if (typeof type !== "string" || !NAME.test(type)) throw new ExtensionError(file, `job(${JSON.stringify(type)}): a job type is letters, digits, _ . : -`);
    if (typeof handler !== "function") throw new ExtensionError(file, `job("${type}"): the handler must be a function`);
    const taken = this.jobs.get(type);
    if (taken) throw new ExtensionError(file, `job("${type}"): already handled by ${taken.file}`);
    this.jobs.set(type, { handler: handler as JobHandler, file });
  }

  route(file: string, method: unknown, path: unknown, handler: unknown, options: unknown): void {
    this.open(file, "route()");
    const m = typeof method === "string" ? method.toUpperCase() : "";
    if (!(ROUTE_METHODS as readonly string[]).includes(m)) throw new ExtensionError(file, `route(${JSON.stringify(method)}): the method must be one of ${ROUTE_METHODS.join(", ")}`);
    if (typeof path !== "string" || !PATH.test(path)) throw new ExtensionError(file, `route(${m}, ${JSON.stringify(path)}): the path must start with / and hold URL path characters (":name" for a parameter)`);
    if (typeof handler !== "function") throw new ExtensionError(file, `route(${m}, "${path}"): the handler must be a function`);
    const opts = (options ?? {}) as RouteOptions;
    if (typeof opts !== "object" || Array.isArray(opts)) throw new ExtensionError(file, `route(${m}, "${path}"): options must be an object`);
    const perms = opts.permission === undefined ? [] : Array.isArray(opts.permission) ? opts.permission : [opts.permission];
    if (perms.some((p) => typeof p !== "string" || p === "")) throw new ExtensionError(file, `route(${m}, "${path}"): permission must be a string or a list of strings`);
    const seg = path.split("/");
    // /api/v1/<resource>… belongs to the generic record interface; an extension may not shadow it.
    if (seg[1] === "api" && seg[2] === "v1" && seg[3] !== undefined) {
      if (seg[3].startsWith(":")) throw new ExtensionError(file, `route(${m}, "${path}"): the first segment after /api/v1/ must be fixed, not a parameter`);
      if (this.site.defs.has(seg[3])) throw new ExtensionError(file, `route(${m}, "${path}"): /api/v1/${seg[3]} is the resource "${seg[3]}"`);
    }
    if (/^\/sitemap(-\d+)?\.xml$/.test(path)) throw new ExtensionError(file, `route(${m}, "${path}"): the sitemap is served by resd`);
    const key = (p: string) => p.replace(/:[^/]+/g, ":").replace(/\/$/, "");
    const same = this.routes.find((r) => r.method === m && key(r.path) === key(path));
    if (same) throw new ExtensionError(file, `route(${m}, "${path}"): already registered by ${same.file} as "${same.path}"`);
    this.routes.push({ method: m as RouteMethod, path, handler: handler as RouteHandler, options: { ...opts, permission: perms }, file });
  }
}

const registries = new WeakMap<Site, Registry>();

/** The site's registry (empty until extensions are loaded; HTTP mounts what it holds). */
export function registryOf(site: Site): Registry {
  let r = registries.get(site);
  if (!r) registries.set(site, (r = new Registry(site)));
  return r;
}

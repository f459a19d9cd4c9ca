/**
 * Builds the API object an extension's default export receives (its shape: contract.ts, documented
 * in docs/hooks.md); extensions never import resd's modules, which also keeps them loadable by the
 * compiled binary.
 */
import { AppError } from "../errors";
import { authorize, can, hasPermission, requirePermission, SYSTEM, ANONYMOUS } from "../access/permissions";
import { createRecord, deleteRecord, listRecords, readRecord, updateRecord } from "../records/service";
import { publicRecord, type ApiRecord } from "../records/output";
import type { StoredRecord } from "../store/types";
import type { Site } from "../site";
import type { JobHandler } from "../jobs/worker";
import type { Registry } from "./registry";
import type { ExtensionApi, Reply } from "./contract";

export type { EventPayload, EventHandler, RouteRequest, Reply, RouteResult, RouteHandler, RouteOptions, ExtensionApi } from "./contract";
export { isReply } from "./contract";

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

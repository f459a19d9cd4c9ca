/**
 * Opening a site: settings, definitions, the store (SQLite in DIR/data or PostgreSQL), the schema
 * brought up to date, the accounts checked. The HTTP server and the CLI both start here; it sits
 * above access, records and jobs, which know a site only by its type (site.ts).
 */
import { join } from "node:path";
import { chmodSync, mkdirSync, writeFileSync, existsSync } from "node:fs";
import { loadConfig, ensureTokenSecret, type Config } from "./config";
import { buildDefinition, loadDefinitions, sameDefinition } from "./definitions/load";
import type { ResourceDef } from "./definitions/types";
import { AppError, notFound } from "./errors";
import { SqliteStore } from "./store/sqlite";
import { PgStore } from "./store/postgres";
import type { SchemaChange, Store } from "./store/types";
import { ensureAccounts } from "./accounts";
import { queueJobsHook } from "./jobs/enqueue";
import type { Site } from "./site";
import { Feed } from "./realtime/feed";

/** `rollback`: definitions older than the stored schema are applied anyway (resd migrate --rollback). */
export async function openSite(config: Config, opts: { ensureSecret?: boolean; rollback?: boolean } = {}): Promise<Site> {
  const cfg = opts.ensureSecret === false ? config : ensureTokenSecret(config);
  const defs = loadDefinitions(cfg.dir);
  // Uploaded files, import spools and (on SQLite) the database live here: the owner's only, whichever store.
  mkdirSync(join(cfg.dir, "data"), { recursive: true, mode: 0o700 });
  chmodSync(join(cfg.dir, "data"), 0o700);
  const store = await openStore(cfg);
  let schemaChanges: SchemaChange[];
  try {
    schemaChanges = await store.syncSchema(defs.values(), { rollback: opts.rollback });
  } catch (e) {
    await store.close();
    throw e;
  }
  const refused = new Map<string, string>();
  /** Takes out of `into` what the sync refused, and notes why. */
  const keepServed = (into: Map<string, ResourceDef>, changes: SchemaChange[]) => {
    for (const c of changes) {
      if (c.action !== "refused") continue;
      into.delete(c.resource);
      refused.set(c.resource, c.detail);
    }
  };
  keepServed(defs, schemaChanges);
  const served = (name: string) => {
    const def = defs.get(name);
    return def && !def.internal && !refused.has(name) ? def : null;
  };
  const feed = new Feed(store, cfg.realtimeBulk);
  const site: Site = {
    config: cfg,
    defs,
    schemaChanges,
    refused,
    store,
    txHooks: [],
    listeners: [],
    feed,
    reloadFailure: null,
    resource(name) {
      const def = served(name);
      if (def) return def;
      const why = refused.get(name);
      if (why) throw new AppError(503, "SERVICE_UNAVAILABLE", `resource "${name}" is not served by this instance: ${why}`, { retryAfter: 60 });
      throw notFound(`resource "${name}" does not exist`);
    },
    served,
    async reload(opts = {}) {
      const fresh = loadDefinitions(cfg.dir);
      // Tables are looked at only for what differs from the definitions in force (and what is
      // refused), unless every resource is to be compared with the stored schema again (`all`).
      const toSync = [...fresh.values()].filter((d) => opts.all || refused.has(d.name) || !sameDefinition(d, defs.get(d.name)));
      const changes = toSync.length ? await store.syncSchema(toSync) : [];
      // Every refused resource was synced again (or its file is gone): `changes` says whether it still is.
      refused.clear();
      keepServed(fresh, changes);
      defs.clear();
      for (const [name, def] of fresh) defs.set(name, def);
      return changes;
    },
    async define(name, raw) {
      const folder = join(cfg.dir, "resources");
      const file = join(folder, `${name}.json`);
      const def = buildDefinition(name, raw, file);
      const refusal = (await store.syncSchema([def])).find((c) => c.action === "refused");
      if (refusal) throw new AppError(409, "RESOURCE_EXISTS", `${name}: ${refusal.detail}`);
      mkdirSync(folder, { recursive: true });
      if (!existsSync(file)) writeFileSync(file, `${JSON.stringify(raw, null, 2)}\n`);
      defs.set(name, def);
      return def;
    },
    close: async () => {
      await feed.flush();
      await store.close();
    },
  };
  // `job:` entries of a definition are queued by every process that writes (server, CLI import).
  site.txHooks.push(queueJobsHook(site));
  await ensureAccounts(site);
  return site;
}

/** SQLite in DIR/data, or the PostgreSQL database of RESD_DATABASE_URL. */
export function openStore(cfg: Config): Promise<Store> {
  const cache = { cacheMaxBytes: cfg.cacheMaxBytes, queryBudgetMs: cfg.queryTimeout, maxQueriesPerCaller: cfg.maxQueriesPerCaller };
  if (cfg.databaseUrl) return PgStore.open(cfg.databaseUrl, { ...cache, directUrl: cfg.databaseDirectUrl || undefined });
  return Promise.resolve(new SqliteStore(join(cfg.dir, "data", "resd.db"), { ...cache, readWorkers: cfg.readWorkers, mmapSize: cfg.mmapSize }));
}

/** Opens a site from a directory with every other setting from the environment and defaults. */
export const openSiteAt = (dir: string) => openSite(loadConfig({ dir }));

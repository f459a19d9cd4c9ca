/**
 * What a site is: its settings, definitions and store, opened once (open-site.ts) and passed to
 * every core function. Types only, so that every module may know a site without depending on how
 * one is opened (which needs accounts, jobs and both stores).
 */
import type { Config } from "./config";
import type { DefinitionFile, ResourceDef } from "./definitions/types";
import type { SchemaChange, Store, StoreTx } from "./store/types";

/** What a committed write looked like; delivered to listeners after commit (events, caches). */
export type WriteEvent = {
  resource: string;
  action: "create" | "update" | "delete";
  uuid: string;
  /** The record as written, hidden fields removed (for a delete: as it was). */
  record: Record<string, unknown>;
  previous: Record<string, unknown> | null;
  user: string | null;
};

/**
 * Work done inside a write's transaction. `wants` is asked first so that a write nobody listens to
 * (most rows of an import) builds no event.
 */
export type TxHook = {
  wants(resource: string, action: WriteEvent["action"]): boolean;
  run(tx: StoreTx, e: WriteEvent): Promise<void>;
};

export type Site = {
  config: Config;
  defs: Map<string, ResourceDef>;
  /** What opening the site changed in tables and indexes to match the definitions. */
  schemaChanges: SchemaChange[];
  store: Store;
  /** Runs inside the write's transaction (e.g. to queue jobs atomically with the record). */
  txHooks: TxHook[];
  /** Runs after the write committed; a throwing listener never affects the write. */
  listeners: ((e: WriteEvent) => void | Promise<void>)[];
  /**
   * Resources whose stored schema is newer than this instance's definition (another instance
   * moved it on): not served here, with the reason (PostgreSQL sites with several instances).
   */
  refused: Map<string, string>;
  /** The definition of a resource served by the generic API, or 404 (503 when refused). */
  resource(name: string): ResourceDef;
  /** The same, or null where `resource` would throw. */
  served(name: string): ResourceDef | null;
  /**
   * Re-reads DIR/resources and syncs tables and indexes: of the resources whose definition differs
   * from the one in force (or that are refused), or of all with `all` (another instance changed
   * a schema). All or nothing: an invalid file throws and the definitions in force stay as they were.
   */
  reload(opts?: { all?: boolean }): Promise<SchemaChange[]>;
  /** The last reload that failed (cleared by the next one that succeeds): shown to admins. */
  reloadFailure: { message: string; at: number } | null;
  /** Adds (or replaces) a definition at run time: writes DIR/resources/<name>.json, syncs tables. */
  define(name: string, raw: DefinitionFile): Promise<ResourceDef>;
  close(): Promise<void>;
};

export const HISTORY_WINDOW_MS = 90 * 24 * 3600 * 1000;


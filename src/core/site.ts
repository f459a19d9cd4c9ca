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
 * A committed change as realtime subscribers are told it (see core/realtime). `bulk`: more records
 * of the resource changed at once than are told one by one (an import, a delete of all, another
 * process's writes); `count` is null where it is not known.
 */
export type Change =
  | {
      resource: string;
      action: "create" | "update" | "delete" | "restore";
      uuid: string;
      /** The record as the API returns it, hidden and encrypted fields removed; for a delete, as it was. */
      record: Record<string, unknown>;
      /**
       * The record before the change (null for a create): a filtered subscription sees whether it
       * left. Undefined where it is not known (a change from another instance too large to carry it).
       */
      previous: Record<string, unknown> | null | undefined;
      /** Seconds since the epoch, as `_modified`. */
      modified: number;
      by: string | null;
    }
  | { resource: string; action: "bulk"; count: number | null };

/**
 * Where committed changes go (core/realtime/feed.ts). Writes add their change inside the
 * transaction; the feed tells them once it committed, never for one rolled back.
 */
export type ChangeFeed = {
  /** False where nobody could be told (a command on SQLite): writes build no change. */
  readonly on: boolean;
  /** `build` is called only while the transaction's changes of the resource are told one by one. */
  add(tx: StoreTx, resource: string, build: () => Change): void;
  /** `count` records of the resource changed without a change each (a delete of all). */
  bulk(tx: StoreTx, resource: string, count: number): void;
  /** `sink` gets the committed changes of this process, and once `listen`ing those of other instances. */
  attach(sink: (changes: Change[]) => void): () => void;
  /**
   * Hears the other instances' changes (PostgreSQL); `load` reads a record a change could not carry,
   * `lost` is told when some may have been missed. Returns the stop.
   */
  listen(load: (resource: string, uuid: string) => Promise<Record<string, unknown> | null>, lost: () => void): Promise<() => Promise<void>>;
  /** Waits until committed changes have reached the other instances. */
  flush(): Promise<void>;
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
  /** Committed changes for realtime subscribers, here and on other instances. */
  feed: ChangeFeed;
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


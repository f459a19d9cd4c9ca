/**
 * The store seam: everything that touches SQL lives behind these interfaces, so a PostgreSQL
 * adapter (Bun.sql) is an addition. Methods return Promises even where SQLite answers at once.
 */
import type { ResourceDef } from "../definitions/types";

export type SqlValue = string | number | bigint | boolean | null | Uint8Array;

/** One stored row: system columns plus the record's fields as JSON text (hidden ones included). */
export type StoredRecord = {
  uuid: string;
  data: string;
  _created: number;
  _modified: number;
  _created_by: string | null;
  _modified_by: string | null;
  /**
   * The row id, on the rows of a page a store keeps where commits can end out of id order
   * (PostgreSQL): revising it places a new row among equal keys by its id. Never sent to a client.
   */
  id?: number;
};

/** One key of a list's order: an SQL expression over the row and its direction. */
export type SortKey = { expr: string; desc: boolean };

/** A list query after compilation: SQL fragments from the dialect, with their bound values. */
export type CompiledQuery = {
  where: string; // "" or "WHERE ..."
  args: SqlValue[];
  orderBy: string; // "" or "ORDER BY ..."
  /** The keys of orderBy, each an expression over the row (the last is the row id). */
  order?: SortKey[];
  limit: number | null;
  offset: number;
  /**
   * A search answered by the search index: its LIKE pattern there, and the same query as a scan
   * of the rows (cheaper for a page of a term most records contain). `alone`: no filter besides
   * the search (its total can be counted over the index's text).
   */
  search?: { resource: string; term: string; scan: { where: string; args: SqlValue[] }; alone: boolean };
  /** Bounded to a few rows by the store's own planning (a selective search): run where it is, no worker hop. */
  small?: boolean;
  /** The total is the sum of these maintained counts (subtracted from the record count when negated). */
  counted?: { keys: string[]; negate: boolean };
  /**
   * Who asks (a user, an anonymous client's address), when a caller in person does: the store's
   * list queries are shared out fairly between callers and bounded per caller (see fair-share.ts).
   * Never part of what is cached: callers share cached answers.
   */
  caller?: string;
};

export type HistoryAction = "create" | "update" | "delete" | "restore";
export type HistoryEntry = {
  id: number;
  resource: string;
  uuid: string;
  action: HistoryAction;
  /** Milliseconds since the epoch. */
  at: number;
  user: string | null;
  /** The record after the change; for a delete, the record as it was. JSON text. */
  data: string;
  _created: number;
  /** The AI agent that made the change for `user` (see core/agents); null or absent otherwise. */
  via?: string | null;
};

export type StoreNow = {
  get(resource: string, uuid: string): StoredRecord | null;
  lastChange(resource: string): number | undefined;
};

/** Writes available inside a transaction. */
export interface StoreTx {
  get(resource: string, uuid: string): Promise<StoredRecord | null>;
  insert(resource: string, rec: StoredRecord): Promise<void>;
  update(resource: string, rec: StoredRecord): Promise<void>;
  delete(resource: string, uuid: string): Promise<boolean>;
  /** Deletes every record; returns how many, after copying each into history when asked. */
  deleteAll(resource: string, history: { user: string | null; at: number } | null): Promise<number>;
  addHistory(entry: Omit<HistoryEntry, "id">): Promise<void>;
  /** Many new records at once, in order (a whole site copied: resd migrate --to); any refusal fails the whole batch. */
  insertMany(resource: string, recs: StoredRecord[]): Promise<void>;
  /** Every record of a resource as this transaction sees it (its own writes included), in order. */
  readAll(resource: string): AsyncIterable<StoredRecord>;
  /** Every history entry as this transaction sees it, in order. */
  readHistory(): AsyncIterable<HistoryEntry>;
  /**
   * Writes the record's "create" entry from `row` (as it is before this change) unless the record
   * has history already: creations are kept lazily, see the record service.
   */
  addCreationIfMissing(resource: string, row: StoredRecord): Promise<void>;
  /** The resource's last committed change as this transaction sees it (see `TxOptions.exclusive`). */
  lastChange(resource: string): Promise<number>;
  /** Runs after the whole transaction committed; dropped when it rolls back. */
  afterCommit(fn: () => void): void;
  /** Queues a job that exists if and only if this transaction commits. */
  enqueueJob(job: NewJob): Promise<void>;
}

/**
 * `alone`: a long transaction (an import) commits by itself rather than with other writes.
 * `exclusive`: no other write to that resource commits while it runs (SQLite has one writer
 * anyway; PostgreSQL locks the table against other writers, on every instance).
 */
export type TxOptions = { alone?: boolean; exclusive?: string };

/** The reads that checking a record write needs (write rules, import matching). */
export interface RecordReads {
  get(resource: string, uuid: string): Promise<StoredRecord | null>;
  /** Finds a record (other than `except`) whose field equals value: unique checks, import matching. */
  findBy(resource: string, field: string, value: SqlValue, except?: string): Promise<StoredRecord | null>;
  /** The same for one key of an object field (one language of a translated field). */
  findByKey(resource: string, field: string, key: string, value: SqlValue, except?: string): Promise<StoredRecord | null>;
  /** Every record of a resource, in the order they were written. */
  all(resource: string): AsyncIterable<StoredRecord>;
}

/** How another thread opens its own `RecordReads` on the same data (see openSqliteReads). */
export type DetachedReads = { kind: "sqlite"; path: string };

export interface Store extends RecordReads {
  readonly dialect: Dialect;
  /**
   * Brings tables and indexes in line with the definitions. `rollback`: a definition older than the
   * stored schema (another instance's) is applied as the newest version instead of being refused.
   */
  syncSchema(defs: Iterable<ResourceDef>, opts?: { rollback?: boolean }): Promise<SchemaChange[]>;
  /** Calls `fn` when another process changed a schema (PostgreSQL instances); returns the unsubscribe. */
  onSchemaChange(fn: () => void): () => void;
  /** A server's start: prepares in the background what the first searches would wait for (PostgreSQL's search lists). */
  warmSearch?(): void;
  /** Where a worker thread can read the committed records itself; null when it cannot (an in-memory database). */
  detachedReads(): DetachedReads | null;
  page(resource: string, q: CompiledQuery): Promise<StoredRecord[]>;
  /**
   * Rows one by one on a connection of their own, so a long stream never pins other reads. A caller
   * past its bound of queries is refused (429) by this call itself, before any row is read.
   */
  stream(resource: string, q: CompiledQuery): AsyncIterable<StoredRecord>;
  count(resource: string, q: Pick<CompiledQuery, "where" | "args" | "counted" | "search" | "caller">): Promise<number>;
  /** A number that changes whenever anything (this process or another) commits; cheap to ask. */
  version(): number;
  /**
   * Resolves once every commit of another process is told to this one, or after `maxMs`
   * (PostgreSQL: a process that just connected waits for commits that asked whether anyone was
   * there before it came; see postgres-presence.ts). A server waits for it before it listens.
   */
  ready?(maxMs: number): Promise<void>;
  /** Milliseconds of the last committed write (create, update or delete) in a resource; 0 if none. */
  lastChange(resource: string): Promise<number>;
  /**
   * Answers at hand without waiting, for the hottest read (see http/records' readOneNow): SQLite
   * reads one record in place; `lastChange` is undefined unless it is remembered. Absent where every
   * read is a round trip (PostgreSQL).
   */
  readonly now?: StoreNow;
  /**
   * Seconds by which a commit may reach this process's answers after it marked its resource
   * (another instance's, its notice on its way): a list's Last-Modified names a second before them
   * (http/conditional). Absent where every commit is in the answers at once (SQLite).
   */
  changeLead?(): number;
  /** Writes of `fn` commit together or not at all; concurrent calls may share one commit (group commit). */
  transaction<T>(fn: (tx: StoreTx) => Promise<T>, opts?: TxOptions): Promise<T>;
  history(resource: string, uuid: string): Promise<HistoryEntry[]>;
  /** Other resd processes using this database (PostgreSQL: by their connections), as `host/pid`. */
  otherProcesses(): Promise<string[]>;
  /** Every history entry of the site in order (resd migrate --to copies them). */
  allHistory(): AsyncIterable<HistoryEntry>;
  historyEntry(id: number): Promise<HistoryEntry | null>;
  /** Delete entries of records of `resource` that are still gone, deleted at or after `since`; newest first. */
  deleted(resource: string, since: number, limit: number): Promise<HistoryEntry[]>;
  /** Removes history of records deleted before `before` (ms) that were not restored; null: another instance purged this hour. */
  purgeHistory(before: number): Promise<number | null>;
  /** Is the database answering? Cheap. */
  ping(): Promise<boolean>;
  /** The durable job queue (see src/core/jobs). */
  readonly jobs: JobQueue;
  /** Sessions and failed-login counters. */
  readonly access: AccessStore;
  /** Messages to the other instances of the site; absent where one process serves it (SQLite). */
  readonly bus?: InstanceBus;
  close(): Promise<void>;
}

/** Messages between the instances sharing a database (PostgreSQL: NOTIFY on a channel of their own). */
export interface InstanceBus {
  /** The longest message in bytes (UTF-8). */
  readonly maxBytes: number;
  /** Sends to every other instance (not to this one), in order; resolves once the database took them. */
  send(messages: string[]): Promise<void>;
  /** Whether another instance was there at the last commit: if not, nothing need be sent. */
  heard(): boolean;
  /**
   * `fn` gets every message of the other instances, in the order they were sent; `lost` is called
   * when some may have been missed (the connection that listens was lost and made again).
   */
  listen(fn: (message: string) => void, lost: () => void): Promise<() => Promise<void>>;
}

export type JobState = "queued" | "running" | "done" | "dead";
/** One queued job. Times are milliseconds since the epoch. */
export type JobRow = {
  id: number;
  type: string;
  resource: string;
  action: string;
  uuid: string;
  /** JSON text of the write event that queued the job. */
  payload: string;
  state: JobState;
  /** Attempts started so far (a running job counts its current attempt). */
  attempts: number;
  run_at: number;
  lease_until: number | null;
  /** Identifies the current claim, so a late worker whose lease expired cannot settle the job. */
  lease: string | null;
  last_error: string | null;
  created: number;
  updated: number;
};
export type NewJob = Pick<JobRow, "type" | "resource" | "action" | "uuid" | "payload" | "run_at">;

/** The queue's operations outside a record write; each runs in a transaction of its own. */
export interface JobQueue {
  /**
   * Takes the next due job (queued and due, or running with an expired lease), marks it running
   * until `now + leaseMs` and counts the attempt. A job whose lease expired after its last allowed
   * attempt is marked dead instead (it crashed the process every time).
   */
  claim(now: number, leaseMs: number, maxAttempts: number): Promise<JobRow | null>;
  /** Pushes the lease of a running job further; false when the claim is no longer ours. */
  extend(id: number, lease: string, until: number): Promise<boolean>;
  complete(id: number, lease: string, now: number): Promise<boolean>;
  /** Settles a failed attempt: queued again at `retryAt`, or dead when `retryAt` is null. */
  fail(id: number, lease: string, now: number, error: string, retryAt: number | null): Promise<boolean>;
  /** Hands a running job back to the queue at once (shutdown before it finished). */
  release(id: number, lease: string, now: number): Promise<boolean>;
  /** Newest first. */
  list(opts: { state?: JobState; limit: number }): Promise<JobRow[]>;
  get(id: number): Promise<JobRow | null>;
  /** Queues a job that is not running again with a fresh attempt count. */
  retry(id: number, now: number): Promise<JobRow | null>;
  /** Removes done jobs settled before `before`. */
  purgeDone(before: number): Promise<number>;
}

/** `refused`: the stored schema is newer than this definition (another instance's); the resource is not served. */
export type SchemaChange = { resource: string; action: "created" | "index-added" | "index-dropped" | "updated" | "refused"; detail: string };

/** SQL spellings that differ between engines. */
export interface Dialect {
  table(resource: string): string;
  /** The expression reading one field of the JSON record; indexes are built on exactly this. */
  field(name: string): string;
  /** A field expression equal to one bound value (bound through `value`). */
  equals(expr: string): string;
  /** A filter value as the engine compares it with a field expression (`type`: the field's type). */
  value(v: SqlValue, type: string): SqlValue;
  /** A field expression that is unset or empty. */
  isEmpty(expr: string): string;
  /** A boolean field expression that is false or unset. */
  isFalse(expr: string): string;
  /** The negation of a condition that may be NULL (an unset field), which then counts as false. */
  not(cond: string): string;
  /** One sort key of a field; unset values first in ascending order, as SQLite sorts them. */
  order(expr: string, desc: boolean): string;
  /**
   * A system column (`_created`, `_modified`) as a sort term names it. ORDER BY takes a bare name
   * for an output column first: where the store selects the column converted under its own name
   * (PostgreSQL, to float), the bare name would sort by the conversion, past every index.
   */
  column(resource: string, name: string): string;
  /** One key inside an object field (a language of a translated field). */
  fieldKey(name: string, key: string): string;
  /** Case-insensitive "contains" (the caller escapes % and _ with backslash). */
  contains(expr: string): string;
  /** Numeric view of an expression (for the `numeric` sort flag on non-number fields). */
  numeric(expr: string): string;
  /** Case-insensitive text view (for the `text` sort flag). */
  text(expr: string): string;
  /** True when the JSON array or object at `expr`'s path holds a value equal to the bound one. */
  jsonHas(path: string): string;
  /** True when a value of the JSON array or object of the field contains the bound LIKE pattern. */
  jsonContains(field: string): string;
  /** The whole stored record as text (a coarse LIKE over it narrows a scan). */
  recordText(): string;
  /** True when the record's search text (the search index) matches the bound LIKE pattern. */
  searchIndex(resource: string): string;
}

/** Tables of the access layer: server-side sessions and failed-login counters. */
export type SessionRow = {
  /** SHA-256 of the cookie value: a stolen database does not yield usable cookies. */
  id: string;
  user: string;
  /** Fingerprint of the user's password hash when the session began. */
  pfp: string;
  created: number;
  seen: number;
  expires: number;
};

export type LoginState = { account: string; failures: number; last_ms: number; locked_until: number };

export interface AccessStore {
  /** Changes whenever anything commits to the database (this process or another). */
  version(): number;
  getSession(id: string): Promise<SessionRow | null>;
  putSession(s: SessionRow): Promise<void>;
  touchSession(id: string, seen: number, expires: number): Promise<void>;
  deleteSession(id: string): Promise<void>;
  purgeSessions(now: number): Promise<number>;
  loginState(account: string): Promise<LoginState | null>;
  /** Reads and replaces one account's counter in one transaction; `null` from `fn` deletes it. */
  updateLoginState(account: string, fn: (cur: LoginState | null) => LoginState | null): Promise<LoginState | null>;
  purgeLoginStates(before: number): Promise<number>;
}


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
};

/** A list query after compilation: SQL fragments from the dialect, with their bound values. */
export type CompiledQuery = {
  where: string; // "" or "WHERE ..."
  args: SqlValue[];
  orderBy: string; // "" or "ORDER BY ..."
  limit: number | null;
  offset: number;
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
  /** Runs after the whole transaction committed; dropped when it rolls back. */
  afterCommit(fn: () => void): void;
}

export interface Store {
  readonly dialect: Dialect;
  syncSchema(defs: Iterable<ResourceDef>): Promise<SchemaChange[]>;
  get(resource: string, uuid: string): Promise<StoredRecord | null>;
  page(resource: string, q: CompiledQuery): Promise<StoredRecord[]>;
  /** Rows one by one on a connection of their own, so a long stream never pins other reads. */
  stream(resource: string, q: CompiledQuery): AsyncIterable<StoredRecord>;
  count(resource: string, where: string, args: SqlValue[]): Promise<number>;
  /** Finds a record (other than `except`) whose field equals value: unique checks, import matching. */
  findBy(resource: string, field: string, value: SqlValue, except?: string): Promise<StoredRecord | null>;
  /** Milliseconds of the last committed write (create, update or delete) in a resource; 0 if none. */
  lastChange(resource: string): Promise<number>;
  transaction<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T>;
  history(resource: string, uuid: string): Promise<HistoryEntry[]>;
  historyEntry(id: number): Promise<HistoryEntry | null>;
  /** Removes history of records deleted before `before` (ms) that were not restored. */
  purgeHistory(before: number): Promise<number>;
  /** Is the database answering? Cheap. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

export type SchemaChange = { resource: string; action: "created" | "index-added" | "index-dropped" | "updated"; detail: string };

/** SQL spellings that differ between engines. */
export interface Dialect {
  table(resource: string): string;
  /** The expression reading one field of the JSON record; indexes are built on exactly this. */
  field(name: string): string;
  /** Case-insensitive "contains" (the caller escapes % and _ with backslash). */
  contains(expr: string): string;
  /** Numeric view of an expression (for the `numeric` sort flag on non-number fields). */
  numeric(expr: string): string;
  /** Case-insensitive text view (for the `text` sort flag). */
  text(expr: string): string;
  /** True when the JSON array or object at `expr`'s path holds a value equal to the bound one. */
  jsonHas(path: string): string;
}

/**
 * What the PostgreSQL store's helpers (the job queue, sessions and logins) need of it: a reserved
 * connection, a query, the change version. postgres.ts hands itself in; they never import it.
 */
import type { ReservedSQL } from "bun";
import type { SqlValue } from "./types";

export type PgHost = {
  raw<T>(fn: (db: ReservedSQL) => Promise<T>, opts?: { announce?: boolean }): Promise<T>;
  query<T>(sql: string, args?: SqlValue[]): Promise<T[]>;
  version(): number;
};

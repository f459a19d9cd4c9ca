/** PostgreSQL stores a test file opens on databases of its own (RESD_TEST_POSTGRES_URL's server). */
import { afterAll, afterEach } from "bun:test";
import type { PgStore } from "../../src/core/store/postgres";
import { databasesOn } from "./psql";

export const PG = process.env.RESD_TEST_POSTGRES_URL || process.env.RESD_TEST_DATABASE_URL || "";

/** `open`: the stores to close after each test; `databases`: made as needed, dropped after the file. */
export function pgStores(): { open: PgStore[]; databases: ReturnType<typeof databasesOn> } {
  const open: PgStore[] = [];
  const databases = databasesOn(PG);
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
  });
  afterAll(() => {
    databases.dropAll();
  });
  return { open, databases };
}

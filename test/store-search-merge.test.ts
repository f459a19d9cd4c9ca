/** The search index is one merged segment after a build; an index of an earlier version is merged or set, not rebuilt. */
import { afterEach, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteStore } from "../src/core/store/sqlite";
import { compileList } from "../src/core/query/compile";
import { parseListParams } from "../src/core/query/parse";
import { buildDefinition } from "../src/core/definitions/load";

const dirs: string[] = [];
afterEach(() => { for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true }); });
const def = buildDefinition("notes", { fields: { title: { type: "text" } } } as never, null);
/** One value read from the site's file, on a connection of its own. */
const readValue = <T>(path: string, sql: string): T | null => {
  const db = new Database(path, { readonly: true });
  try {
    return (db.query(sql).get() as { v: T } | null)?.v ?? null;
  } finally {
    db.close();
  }
};
// The rows of the index's data table: segments and their pages (fewer after a merge).
const segments = (path: string) => readValue<number>(path, `SELECT count(*) AS v FROM "s:notes_data"`)!;
const automerge = (path: string) => readValue<number>(path, `SELECT v FROM "s:notes_config" WHERE k = 'automerge'`);

/** A site's file with the notes index built, `n` notes written one transaction each, the store closed. */
async function indexWithNotes(n: number): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "resd-merge-"));
  dirs.push(dir);
  const path = join(dir, "resd.db");
  const store = new SqliteStore(path, { readWorkers: 0 });
  await store.syncSchema([def]);
  for (let i = 0; i < n; i++) await store.transaction(async (tx) => tx.insert("notes", { uuid: crypto.randomUUID(), data: JSON.stringify({ title: `note number ${i}` }), _created: i, _modified: i, _created_by: null, _modified_by: null }));
  await store.close();
  return path;
}

test("a version 2 search index is merged into one segment at the next sync, and finds the same records", async () => {
  // Many small transactions leave many segments, as before the merge existed.
  const path = await indexWithNotes(300);
  const db = new Database(path);
  db.query("UPDATE _resd_derived SET spec = replace(spec, '\"v\":4', '\"v\":2') WHERE resource = 'notes' AND kind = 'search'").run();
  db.close();
  const before = segments(path);
  const store = new SqliteStore(path, { readWorkers: 0 });
  const changes = await store.syncSchema([def]);
  expect(changes).toEqual([{ resource: "notes", action: "index-added", detail: "search index merged into one segment" }]);
  expect(segments(path)).toBeLessThan(before);
  const q = compileList(store.dialect, def, parseListParams({ search: "number 123", limit: "10" }));
  expect((await store.page("notes", q)).map((r) => JSON.parse(r.data).title)).toEqual(["note number 123"]);
  expect(await store.syncSchema([def])).toEqual([]);
  await store.close();
});

test("a new index merges 8 segments at a time; a version 3 index is set so at the next sync, not rebuilt", async () => {
  const path = await indexWithNotes(20);
  expect(automerge(path)).toBe(8);
  // As a version 3 index was: FTS5's default setting.
  const db = new Database(path);
  db.exec(`INSERT INTO "s:notes" ("s:notes", rank) VALUES ('automerge', 4)`);
  db.query("UPDATE _resd_derived SET spec = replace(spec, '\"v\":4', '\"v\":3') WHERE resource = 'notes' AND kind = 'search'").run();
  db.close();
  expect(automerge(path)).toBe(4);
  const before = segments(path);
  const store = new SqliteStore(path, { readWorkers: 0 });
  expect(await store.syncSchema([def])).toEqual([{ resource: "notes", action: "index-added", detail: "search index merges 8 segments at a time" }]);
  expect(automerge(path)).toBe(8);
  expect(segments(path)).toBe(before);
  const q = compileList(store.dialect, def, parseListParams({ search: "number 13", limit: "10" }));
  expect((await store.page("notes", q)).map((r) => JSON.parse(r.data).title)).toEqual(["note number 13"]);
  expect(await store.syncSchema([def])).toEqual([]);
  await store.close();
});

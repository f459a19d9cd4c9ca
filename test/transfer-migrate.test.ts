import { afterAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cli, makeSite } from "./helpers/site";

const notes = { fields: { title: { type: "text" }, year: { type: "number" } } };
const dir = makeSite({ defs: { notes }, store: "sqlite" }); // tables and indexes are read from the SQLite file
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const indexes = () => {
  const db = new Database(join(dir, "data", "resd.db"), { readonly: true });
  try {
    return (db.query("SELECT name FROM sqlite_master WHERE type='index' AND tbl_name='r:notes' AND name LIKE 'ix:%'").all() as { name: string }[]).map((r) => r.name).sort();
  } finally {
    db.close();
  }
};

test("resd migrate brings tables and indexes in line with the definitions", async () => {
  const first = await cli(dir, ["migrate", "--json"]);
  expect(first.code).toBe(0);
  expect(JSON.parse(first.stdout).ok).toBe(true);
  expect(indexes()).toEqual(["ix:notes:_created", "ix:notes:_id", "ix:notes:_modified"]);
  writeFileSync(join(dir, "resources", "notes.json"), JSON.stringify({ ...notes, index: ["year"], unique: ["title"] }));
  const second = await cli(dir, ["migrate"]);
  expect(second.code).toBe(0);
  expect(indexes()).toEqual(["ix:notes:_created", "ix:notes:_id", "ix:notes:_modified", "ix:notes:unique:title", "ix:notes:year"]);
  writeFileSync(join(dir, "resources", "notes.json"), JSON.stringify(notes));
  expect((await cli(dir, ["migrate"])).code).toBe(0);
  expect(indexes()).toEqual(["ix:notes:_created", "ix:notes:_id", "ix:notes:_modified"]);
});

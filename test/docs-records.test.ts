/** docs/records.md's examples are what resd does: the `group` field's definition and a record it takes. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { buildDefinition } from "../src/core/definitions/load";
import { adminSite, ROOT } from "./helpers/site";

const records = readFileSync(join(ROOT, "docs/records.md"), "utf8");
const example = /A `group` field lists its sub-fields under `fields`[\s\S]*?```json\n([\s\S]*?)```\s*```json\n([\s\S]*?)```/.exec(records);

let s: Awaited<ReturnType<typeof adminSite>>;
beforeAll(async () => {
  expect(example).not.toBeNull();
  s = await adminSite({ defs: { pages: JSON.parse(example![1]) } });
});
afterAll(async () => { await s.cleanup(); });

test("the group example names its sub-fields under `fields`, and the definition is valid", () => {
  const def = buildDefinition("pages", JSON.parse(example![1]), "docs/records.md");
  expect(Object.keys(def.fields.sections.fields ?? {})).toEqual(["heading", "body", "image", "links"]);
});

test("the example record is accepted as shown, and the refusal the page quotes is the server's", async () => {
  const created = await s.apiJson("POST", "/api/v1/pages", JSON.parse(example![2]));
  expect(created.status).toBe(201);
  const record = Object.values(created.body!.pages as Record<string, { sections: unknown }>)[0];
  expect(record.sections).toEqual(JSON.parse(example![2]).sections);
  const quoted = /`"errors": (\{[^`]+\})`/.exec(records)![1];
  const bad = await s.apiJson("POST", "/api/v1/pages", { title: "x", sections: [{ heading: "ok" }, { body: "<p>no heading</p>" }] });
  expect(bad.status).toBe(422);
  expect(bad.body!.errors).toEqual(JSON.parse(quoted));
});

import { describe, expect, test } from "bun:test";
import { parseListParams, parseSort, parseFilter } from "../src/core/query/parse";
import { compileList } from "../src/core/query/compile";
import { buildDefinition } from "../src/core/definitions/load";
import { sqliteDialect as d } from "../src/core/store/dialect";

const def = buildDefinition("items", {
  fields: {
    title: { type: "text" }, year: { type: "number" }, status: { type: "text" }, tags: { type: "select", multi: true, options: { a: "A" } },
    published: { type: "boolean" }, secret: { type: "text" },
  },
  hidden: "secret",
  sort: { field: "year", flags: "numeric", order: "desc" },
} as never, null);

const f = (n: string) => d.field(n);
const compile = (p: Record<string, string>) => compileList(d, def, parseListParams(p));

describe("parse", () => {
  test.each([
    ["year|desc", [{ field: "year", flag: null, desc: true }]],
    ["title|text|asc", [{ field: "title", flag: "text", desc: false }]],
    ["year|numeric|desc,title|asc", [{ field: "year", flag: "numeric", desc: true }, { field: "title", flag: null, desc: false }]],
    ["title", [{ field: "title", flag: null, desc: false }]],
    ["year|DESC", [{ field: "year", flag: null, desc: true }]],
  ])("sort %s", (raw, want) => expect(parseSort(raw)).toEqual(want as never));

  test.each([
    ["status:new", [{ field: "status", values: ["new"], negate: false }]],
    ["status:!draft", [{ field: "status", values: ["draft"], negate: true }]],
    ["status:new||todo,published:1", [{ field: "status", values: ["new", "todo"], negate: false }, { field: "published", values: ["1"], negate: false }]],
    ["url:http://x", [{ field: "url", values: ["http://x"], negate: false }]],
  ])("filter %s", (raw, want) => expect(parseFilter(raw)).toEqual(want as never));

  test.each([["sort", "year|up"], ["sort", "a|b|c|d"], ["sort", "year|fancy|asc"], ["filter", "nocolon"], ["filter", ":x"], ["limit", "-3"], ["limit", "1.5"], ["offset", "x"]])(
    "%s=%s is refused", (k, v) => expect(() => parseListParams({ [k]: v })).toThrow(),
  );

  test("total only when limit, offset, sort or filter is used", () => {
    expect(parseListParams({}).wantsTotal).toBe(false);
    expect(parseListParams({ search: "x" }).wantsTotal).toBe(false);
    for (const k of ["limit", "offset", "sort", "filter"]) expect(parseListParams({ [k]: k === "sort" ? "year" : k === "filter" ? "a:b" : "1" }).wantsTotal).toBe(true);
  });

  test("a maximum limit is enforced when configured", () => {
    expect(() => parseListParams({ limit: "501" }, 500)).toThrow("at most 500");
  });
});

describe("compile", () => {
  test.each<[Record<string, string>, string, (string | number)[], string]>([
    [{}, "", [], `ORDER BY ${f("year")} DESC, id DESC`],
    [{ filter: "status:new" }, `WHERE ${f("status")} = ?`, ["new"], `ORDER BY ${f("year")} DESC, id DESC`],
    [{ filter: "status:!new" }, `WHERE NOT COALESCE(${f("status")} = ?, 0)`, ["new"], `ORDER BY ${f("year")} DESC, id DESC`],
    [{ filter: "status:a||b" }, `WHERE (${f("status")} = ? OR ${f("status")} = ?)`, ["a", "b"], `ORDER BY ${f("year")} DESC, id DESC`],
    [{ filter: "year:2001" }, `WHERE ${f("year")} = ?`, [2001], `ORDER BY ${f("year")} DESC, id DESC`],
    [{ filter: "published:1" }, `WHERE ${f("published")} = ?`, [1], `ORDER BY ${f("year")} DESC, id DESC`],
    [{ filter: "published:0" }, `WHERE (${f("published")} = 0 OR ${f("published")} IS NULL)`, [], `ORDER BY ${f("year")} DESC, id DESC`],
    [{ filter: "tags:a" }, `WHERE ${d.jsonHas("tags")}`, ["a"], `ORDER BY ${f("year")} DESC, id DESC`],
    [{ filter: "status:" }, `WHERE (${f("status")} IS NULL OR ${f("status")} = '')`, [], `ORDER BY ${f("year")} DESC, id DESC`],
    [{ filter: "_created:5", sort: "_modified|asc" }, "WHERE _created = ?", [5], "ORDER BY _modified ASC, id ASC"],
    [{ sort: "title|text|asc" }, "", [], `ORDER BY ${f("title")} COLLATE NOCASE ASC, id ASC`],
    [{ sort: "title|numeric|desc" }, "", [], `ORDER BY CAST(${f("title")} AS REAL) DESC, id DESC`],
    [{ sort: "year|numeric|asc" }, "", [], `ORDER BY ${f("year")} ASC, id ASC`],
    [{ search: "50%" }, `WHERE (${f("title")} LIKE ? ESCAPE '\\')`, ["%50\\%%"], `ORDER BY ${f("year")} DESC, id DESC`],
  ])("%j", (params, where, args, orderBy) => {
    const c = compile(params);
    expect(c.where).toBe(where);
    expect(c.args).toEqual(args);
    expect(c.orderBy).toBe(orderBy);
  });

  test.each([["sort", "secret|asc"], ["filter", "secret:x"], ["sort", "ghost"], ["filter", "ghost:1"], ["filter", "year:abc"], ["filter", "published:maybe"], ["sort", "toString"], ["filter", "constructor:x"], ["filter", "__proto__:x"]])(
    "%s=%s → 400", (k, v) => {
      try {
        compile({ [k]: v });
        throw new Error("compiled");
      } catch (e) {
        expect((e as { status?: number }).status).toBe(400);
      }
    },
  );

  test("limit and offset pass through", () => {
    expect(compile({ limit: "20", offset: "40" })).toMatchObject({ limit: 20, offset: 40 });
    expect(compile({})).toMatchObject({ limit: null, offset: 0 });
  });
});

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { adminSite, cli } from "./helpers/site";
import { articles } from "./fixtures/transfer-defs";

const items = { fields: { id: { type: "text" }, name: { type: "text" }, qty: { type: "number" } } };

let s: Awaited<ReturnType<typeof adminSite>>;
beforeAll(async () => { s = await adminSite({ defs: { articles, items } }); });
afterAll(async () => { await s.cleanup(); });

async function upload(path: string, text: string, name: string, token = s.token) {
  const form = new FormData();
  form.append("file", new Blob([text]), name);
  const res = await fetch(s.base + path, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: form });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}
const list = async (resource: string) => (await s.apiJson("GET", `/api/v1/${resource}`)).body![resource] as Record<string, Record<string, any>>;

describe("export", () => {
  test("csv: download name, header with uuid, system fields and every visible field; hidden and encrypted absent", async () => {
    await s.apiJson("POST", "/api/v1/articles", { uuid: "exp-1", title: "Visible", secret: "s3cret-long-1", pin: "1234", code: "E1" });
    const res = await s.api("GET", "/api/v1/articles/export?format=csv");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("text/csv");
    const day = new Date().toISOString().slice(0, 10);
    expect(res.headers.get("content-disposition")).toBe(`attachment; filename="articles-${day}.csv"`);
    const text = await res.text();
    const [header] = text.split("\r\n");
    expect(header).toBe("uuid,_created,_modified,_created_by,_modified_by,title,body,summary,year,published,tags,label,gallery,lat,lng,code");
    expect(text).toContain("exp-1");
    expect(text).not.toContain("s3cret-long-1");
    expect(text).not.toContain("1234");
  });

  test("json carries _meta beside the records keyed by uuid; tsv uses tabs", async () => {
    const res = await s.api("GET", "/api/v1/articles/export");
    expect(res.headers.get("content-type")).toStartWith("application/json");
    expect(res.headers.get("content-disposition")).toMatch(/filename="articles-\d{4}-\d{2}-\d{2}\.json"/);
    const doc = (await res.json()) as Record<string, any>;
    expect(doc._meta.fields.title).toEqual({ type: "text", required: true });
    expect(doc["exp-1"]).toMatchObject({ uuid: "exp-1", title: "Visible", code: "E1" });
    expect(doc["exp-1"].secret).toBeUndefined();
    expect(doc["exp-1"].pin).toBeUndefined();
    const tsv = await (await s.api("GET", "/api/v1/articles/export?format=tsv")).text();
    expect(tsv.split("\n")[0]).toStartWith("uuid\t_created\t_modified");
    expect((await s.apiJson("GET", "/api/v1/articles/export?format=xml")).status).toBe(400);
  });

  test("static paths win over record uuids; other methods 405; unknown resource 404", async () => {
    expect((await s.apiJson("POST", "/api/v1/articles/export", {})).status).toBe(405);
    expect((await s.apiJson("GET", "/api/v1/articles/import")).status).toBe(405);
    expect((await s.apiJson("GET", "/api/v1/articles/exp-1")).status).toBe(200);
    expect((await s.apiJson("GET", "/api/v1/nothing/export")).status).toBe(404);
  });
});

describe("import", () => {
  test("csv: valid rows committed, invalid rows skipped and reported with row, field and reason", async () => {
    const csv = "title,year,published,tags\nOne,2001,true,\"[\"\"a\"\",\"\"b\"\"]\"\n,2002,false,\nThree,notanumber,yes,c\nFour,2004,0,\n";
    const r = await upload("/api/v1/articles/import", csv, "rows.csv");
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ code: 200, success: true, status: "ok", format: "csv" });
    expect(r.body.stats).toEqual({ imported: 2, errors: 2, created: 2, updated: 0, total: 4, matched: {} });
    expect(r.body.errors_detail).toEqual([
      { row: 2, field: "title", reason: "is required" },
      { row: 3, field: "year", reason: "must be a number" },
    ]);
    const recs = Object.values(await list("articles"));
    expect(recs.find((x) => x.title === "One")).toMatchObject({ year: 2001, published: true, tags: ["a", "b"] });
    expect(recs.find((x) => x.title === "Four")).toMatchObject({ year: 2004, published: false });
    expect(recs.find((x) => x.title === "Three")).toBeUndefined();
  });

  test("the API's write rules: html cleaned, shortcodes escaped, unique values (also within one file)", async () => {
    const rows = [
      { title: "Rules", body: "<p>ok</p><script>alert(1)</script>", summary: "say [#danger#]", code: "U1" },
      { title: "Dup", code: "U1" },
      { title: "Taken", code: "E1" },
    ];
    const r = await upload("/api/v1/articles/import", JSON.stringify(rows), "rows.json");
    expect(r.body.stats).toEqual({ imported: 1, errors: 2, created: 1, updated: 0, total: 3, matched: {} });
    expect(r.body.errors_detail.map((e: any) => [e.row, e.field])).toEqual([[2, "code"], [3, "code"]]);
    const rec = Object.values(await list("articles")).find((x) => x.title === "Rules")!;
    expect(rec.body).toBe("<p>ok</p>");
    expect(rec.summary).toBe("say &#91;#danger#&#93;");
  });

  test("matching: uuid, else id, name, title in that order; others create", async () => {
    await s.apiJson("POST", "/api/v1/items/i1", { id: "A-1", name: "Apple", qty: 1 });
    await s.apiJson("POST", "/api/v1/items/i2", { id: "B-2", name: "Banana", qty: 2 });
    await s.apiJson("POST", "/api/v1/items/i3", { name: "Cherry", qty: 3 });
    const csv = [
      "uuid,id,name,qty",
      "i2,B-2,Banana,20", // uuid
      "nope,,Cherry,33", // unknown uuid: name matches
      ",A-1,Cherry,10", // id wins over name
      ",C-9,Date,4", // new
      ",C-9,Date,5", // matches the record the row above created
    ].join("\n");
    const r = await upload("/api/v1/items/import", csv, "items.csv");
    expect(r.body.stats).toEqual({ imported: 5, errors: 0, created: 1, updated: 4, total: 5, matched: { uuid: 1, name: 1, id: 2 } });
    const recs = await list("items");
    expect(recs.i1).toMatchObject({ id: "A-1", name: "Cherry", qty: 10 });
    expect(recs.i2).toMatchObject({ id: "B-2", name: "Banana", qty: 20 });
    expect(recs.i3).toMatchObject({ name: "Cherry", qty: 33 });
    expect(recs.nope).toBeUndefined();
    const created = Object.values(recs).filter((x) => x.id === "C-9");
    expect(created).toHaveLength(1);
    expect(created[0]).toMatchObject({ name: "Date", qty: 5 });

    const byTitle = await upload("/api/v1/articles/import", "title,year\nVisible,1999\n", "t.csv");
    expect(byTitle.body.stats).toMatchObject({ created: 0, updated: 1 });
    expect((await list("articles"))["exp-1"]).toMatchObject({ title: "Visible", year: 1999, code: "E1" });
  });

  test("format from content: JSON named .csv, tsv named .txt; object keyed by uuid", async () => {
    const keyed = JSON.stringify({ "k-1": { name: "Keyed", qty: 7 } });
    expect((await upload("/api/v1/items/import", keyed, "wrong.csv")).body).toMatchObject({ format: "json", stats: { created: 1 } });
    expect((await list("items"))["k-1"]).toMatchObject({ name: "Keyed", qty: 7 });
    const tsv = "name\tqty\nTabbed\t8\n";
    expect((await upload("/api/v1/items/import", tsv, "data.txt")).body).toMatchObject({ format: "tsv", stats: { created: 1 } });
  });

  test("file problems: bad JSON, unknown column, missing part, unknown resource", async () => {
    expect((await upload("/api/v1/items/import", "{oops", "x.json")).status).toBe(400);
    const unknown = await upload("/api/v1/items/import", "name,colour\nX,red\n", "x.csv");
    expect(unknown.status).toBe(400);
    expect(unknown.body.details).toContain("colour");
    const res = await fetch(s.base + "/api/v1/items/import", { method: "POST", headers: { authorization: `Bearer ${s.token}` }, body: new FormData() });
    expect(res.status).toBe(400);
    expect((await upload("/api/v1/nothing/import", "name\nX\n", "x.csv")).status).toBe(404);
  });

  test("strict: one rejected row and nothing is written (422)", async () => {
    const before = Object.keys(await list("items")).length;
    const r = await upload("/api/v1/items/import?strict=1", "name,qty\nGood,1\nBad,x\n", "x.csv");
    expect(r.status).toBe(422);
    expect(r.body.stats).toEqual({ imported: 0, errors: 1, created: 0, updated: 0, total: 2, matched: {} });
    expect(Object.keys(await list("items")).length).toBe(before);
  });

  test("users: passwords hashed on import, never exported", async () => {
    const r = await upload("/api/v1/users/import", "email,name,password,role,api\nimp@example.com,Imp,imp-password-1,admin,true\n", "u.csv");
    expect(r.body.stats).toMatchObject({ created: 1, errors: 0 });
    const tok = await fetch(s.base + "/api/v1/auth/token", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "imp@example.com", password: "imp-password-1" }) });
    expect(tok.status).toBe(200);
    const csv = await (await s.api("GET", "/api/v1/users/export?format=csv")).text();
    expect(csv).toContain("imp@example.com");
    expect(csv).not.toContain("imp-password-1");
    expect(csv.split("\r\n")[0]).not.toContain("password");
  });

  test("permissions: import-<resource> and export-<resource>", async () => {
    expect((await s.apiJson("POST", "/api/v1/roles", { name: "viewer", permissions: ["view-items", "export-items"] })).status).toBe(201);
    expect((await cli(s.dir, ["user", "add", "viewer@example.com", "--password", "viewer-password", "--role", "viewer", "--api"])).code).toBe(0);
    const token = (await cli(s.dir, ["token", "viewer@example.com"])).stdout.trim();
    const denied = await upload("/api/v1/items/import", "name\nX\n", "x.csv", token);
    expect(denied.status).toBe(403);
    expect(denied.body.needs).toContain("import-items");
    const ok = await fetch(s.base + "/api/v1/items/export", { headers: { authorization: `Bearer ${token}` } });
    expect(ok.status).toBe(200);
    const no = await fetch(s.base + "/api/v1/articles/export", { headers: { authorization: `Bearer ${token}` } });
    expect(no.status).toBe(403);
    expect(((await no.json()) as any).needs).toContain("export-articles");
  });

  test("a JSON export imported where the resource does not exist creates it from _meta", async () => {
    const exported = await (await s.api("GET", "/api/v1/items/export")).text();
    const r = await upload("/api/v1/stock/import", exported, "items-2026-01-01.json");
    expect(r.status).toBe(200);
    expect(r.body.resource_created).toBe(true);
    const n = Object.keys(JSON.parse(exported)).length - 1;
    expect(r.body.stats).toEqual({ imported: n, errors: 0, created: n, updated: 0, total: n, matched: {} });
    const file = join(s.dir, "resources", "stock.json");
    expect(existsSync(file)).toBe(true);
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual(items);
    expect(Object.keys(await list("stock"))).toHaveLength(n);
    // Without _meta a missing resource stays missing.
    expect((await upload("/api/v1/stock2/import", JSON.stringify([{ name: "x" }]), "x.json")).status).toBe(404);
  });
});

describe("formula guard", () => {
  test("cells that a spreadsheet would run are exported with an apostrophe and imported back exactly", async () => {
    const values = ["=HYPERLINK(\"http://x\")", "+1", "-1", "@SUM(A1)", "'=quoted", "'plain", "fine"];
    for (const [i, v] of values.entries()) await s.apiJson("POST", `/api/v1/items/f${i}`, { name: v, qty: -i });
    const csv = await (await s.api("GET", "/api/v1/items/export?format=csv")).text();
    expect(csv).toContain(`"'=HYPERLINK(""http://x"")"`);
    expect(csv).toContain(",'+1,");
    expect(csv).toContain(",'-1,");
    expect(csv).toContain(",'@SUM(A1),");
    expect(csv).toContain(",''=quoted,");
    expect(csv).toContain(",'plain,");
    expect(csv).toContain(",-6\r\n"); // numbers are not guarded
    const lines = csv.split("\r\n").filter((l) => /^f\d,/.test(l));
    const edited = ["uuid,_created,_modified,_created_by,_modified_by,id,name,qty", ...lines].join("\r\n");
    for (const [i] of values.entries()) await s.apiJson("PUT", `/api/v1/items/f${i}`, { name: "changed" });
    const r = await upload("/api/v1/items/import", edited, "back.csv");
    expect(r.body.stats).toMatchObject({ updated: values.length, errors: 0 });
    const recs = await list("items");
    for (const [i, v] of values.entries()) expect(recs[`f${i}`].name).toBe(v);
  });
});

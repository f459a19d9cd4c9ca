/** Import matching is the importer's choice (--match, --no-match), reported per key; CSV quoting errors name their line. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { adminSite, cli, makeSite } from "./helpers/site";

const contacts = {
  unique: ["email"],
  fields: { name: { type: "text" }, email: { type: "email" }, city: { type: "text" } },
};

const dirs: string[] = [];
afterAll(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

/** A site with one "John Smith" (a@example.com, Oslo) already stored. */
async function seeded() {
  const dir = makeSite({ defs: { contacts } });
  dirs.push(dir);
  writeFileSync(join(dir, "seed.json"), JSON.stringify([{ uuid: "c-1", name: "John Smith", email: "a@example.com", city: "Oslo" }]));
  expect((await cli(dir, ["import", "contacts", join(dir, "seed.json")])).code).toBe(0);
  return dir;
}

const all = async (dir: string) => {
  const r = await cli(dir, ["export", "contacts", "--format", "json"]);
  const doc = JSON.parse(r.stdout) as Record<string, Record<string, unknown>>;
  delete doc._meta;
  return Object.values(doc).map((x) => ({ uuid: x.uuid, name: x.name, email: x.email, city: x.city }));
};

/** Two different people of the same name, neither with a uuid. */
const twoJohns = "name,email,city\nJohn Smith,a@example.com,Bergen\nJohn Smith,b@example.com,Rome\n";

describe("resd import --match", () => {
  test("default (the spec's rule): rows match by name, so two John Smiths merge, and the stats say so", async () => {
    const dir = await seeded();
    writeFileSync(join(dir, "johns.csv"), twoJohns);
    const r = await cli(dir, ["import", "contacts", join(dir, "johns.csv"), "--json"]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).stats).toEqual({ imported: 2, errors: 0, created: 0, updated: 2, total: 2, matched: { name: 2 } });
    const text = await cli(dir, ["import", "contacts", join(dir, "johns.csv")]);
    expect(text.stdout).toContain("updated 2: matched 2 by name");
    expect(await all(dir)).toEqual([{ uuid: "c-1", name: "John Smith", email: "b@example.com", city: "Rome" }]);
  });

  test("--match email: the same person updates, the other is created", async () => {
    const dir = await seeded();
    writeFileSync(join(dir, "johns.csv"), twoJohns);
    const r = await cli(dir, ["import", "contacts", join(dir, "johns.csv"), "--match", "email", "--json"]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).stats).toEqual({ imported: 2, errors: 0, created: 1, updated: 1, total: 2, matched: { email: 1 } });
    const rows = await all(dir);
    expect(rows).toHaveLength(2);
    expect(rows.find((x) => x.uuid === "c-1")).toEqual({ uuid: "c-1", name: "John Smith", email: "a@example.com", city: "Bergen" });
    expect(rows.find((x) => x.email === "b@example.com")).toMatchObject({ name: "John Smith", city: "Rome" });
  });

  test("--match uuid: only a uuid matches; rows without one create", async () => {
    const dir = await seeded();
    writeFileSync(join(dir, "u.csv"), "uuid,name,email,city\nc-1,John Smith,a@example.com,Paris\n,John Smith,c@example.com,Lima\n");
    const r = await cli(dir, ["import", "contacts", join(dir, "u.csv"), "--match", "uuid", "--json"]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).stats).toMatchObject({ created: 1, updated: 1, matched: { uuid: 1 } });
    expect((await all(dir)).map((x) => x.city).sort()).toEqual(["Lima", "Paris"]);
  });

  test("--no-match: every row creates; a row whose uuid exists is rejected (exit 3), nothing merged", async () => {
    const dir = await seeded();
    writeFileSync(join(dir, "n.csv"), "uuid,name,email,city\n,John Smith,d@example.com,Kyiv\nc-1,John Smith,e@example.com,Quito\nn-1,Ann,f@example.com,Oslo\nn-1,Ann,g@example.com,Oslo\n");
    const r = await cli(dir, ["import", "contacts", join(dir, "n.csv"), "--no-match", "--json"]);
    expect(r.code).toBe(3);
    const out = JSON.parse(r.stdout);
    expect(out.stats).toEqual({ imported: 2, errors: 2, created: 2, updated: 0, total: 4, matched: {} });
    expect(out.errors_detail.map((e: { row: number; field: string }) => [e.row, e.field])).toEqual([[2, "uuid"], [4, "uuid"]]);
    const rows = await all(dir);
    expect(rows.find((x) => x.uuid === "c-1")?.city).toBe("Oslo");
    expect(rows.find((x) => x.uuid === "n-1")?.email).toBe("f@example.com");
    expect(rows).toHaveLength(3);
  });

  test("a field that is not unique, or not a field, is refused before anything is read (exit 2)", async () => {
    const dir = await seeded();
    writeFileSync(join(dir, "johns.csv"), twoJohns);
    const city = await cli(dir, ["import", "contacts", join(dir, "johns.csv"), "--match", "city"]);
    expect(city.code).toBe(2);
    expect(city.stderr).toContain('"city" is not a unique field');
    const nope = await cli(dir, ["import", "contacts", join(dir, "johns.csv"), "--match", "nope"]);
    expect(nope.code).toBe(2);
    expect(nope.stderr).toContain('"nope" is not a field');
    expect(await all(dir)).toHaveLength(1);
  });
});

describe("CSV quoting errors", () => {
  test("an unterminated quote names the line where it opened; nothing is written", async () => {
    const dir = await seeded();
    writeFileSync(join(dir, "q.csv"), 'name,email,city\nAnn,x@example.com,Oslo\nBob,y@example.com,"Ber\ngen\nCid,z@example.com,Rome\n');
    const r = await cli(dir, ["import", "contacts", join(dir, "q.csv")]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("line 3: a quoted value opens here and is never closed");
    expect(await all(dir)).toHaveLength(1);
  });

  test("the line is right far into a large file (past the first read chunks), CRLF line ends too", async () => {
    const dir = await seeded();
    const good = Array.from({ length: 30_000 }, (_, i) => `P${i},p${i}@example.com,"multi\r\nline ${i}"`);
    // Each good row spans two lines: the bad row's quote opens on line 1 + 60,000 + 1.
    writeFileSync(join(dir, "big.csv"), `name,email,city\r\n${good.join("\r\n")}\r\nBad,bad@example.com,"never closed\r\nLast,last@example.com,x\r\n`);
    const r = await cli(dir, ["import", "contacts", join(dir, "big.csv")]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("line 60002: a quoted value opens here");
  });

  test("a stray quote inside a quoted value is named too", async () => {
    const dir = await seeded();
    writeFileSync(join(dir, "s.csv"), 'name,email,city\nAnn,x@example.com,"Os"lo"\n');
    const r = await cli(dir, ["import", "contacts", join(dir, "s.csv")]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("line 2: a quote inside a quoted value must be doubled");
  });
});

describe("HTTP import ?match=", () => {
  let s: Awaited<ReturnType<typeof adminSite>>;
  beforeAll(async () => { s = await adminSite({ defs: { contacts } }); });
  afterAll(async () => { await s.cleanup(); });

  const upload = async (query: string, text: string) => {
    const form = new FormData();
    form.append("file", new Blob([text]), "c.csv");
    const res = await fetch(`${s.base}/api/v1/contacts/import${query}`, { method: "POST", headers: { authorization: `Bearer ${s.token}` }, body: form });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };

  test("match=email, match=none and a refused field, like the CLI", async () => {
    expect((await upload("", "name,email,city\nJohn Smith,a@example.com,Oslo\n")).status).toBe(200);
    const byEmail = await upload("?match=email", twoJohns);
    expect(byEmail.status).toBe(200);
    expect(byEmail.body.stats).toEqual({ imported: 2, errors: 0, created: 1, updated: 1, total: 2, matched: { email: 1 } });
    const none = await upload("?match=none", "name,email,city\nJohn Smith,z@example.com,Oslo\n");
    expect(none.body.stats).toMatchObject({ created: 1, updated: 0 });
    const bad = await upload("?match=city", twoJohns);
    expect(bad.status).toBe(400);
    expect(bad.body.details).toContain("not a unique field");
  });
});

describe("JSON imports are read record by record", () => {
  test("a record that is not valid JSON is rejected alone; the rest are imported", async () => {
    const dir = await seeded();
    writeFileSync(join(dir, "j.json"), '[{"name":"Ann","email":"ann@example.com"}, {"name": tru, "email":"x@example.com"}, {"name":"Bob","email":"bob@example.com"}]');
    const r = await cli(dir, ["import", "contacts", join(dir, "j.json"), "--json"]);
    expect(r.code).toBe(3);
    const out = JSON.parse(r.stdout);
    expect(out.stats).toMatchObject({ created: 2, errors: 1, total: 3 });
    expect(out.errors_detail[0]).toMatchObject({ row: 2, field: null });
    expect(out.errors_detail[0].reason).toStartWith("is not valid JSON");
  });

  test("an API list answer saved from curl imports its records, not its envelope; broken structure writes nothing", async () => {
    const dir = await seeded();
    const answer = { code: 200, success: true, status: "ok", count: 2, total: 2, contacts: { "c-9": { name: "Cy", email: "cy@example.com" }, "c-8": { name: "Di", email: "di@example.com" } } };
    writeFileSync(join(dir, "a.json"), JSON.stringify(answer, null, 2));
    const r = await cli(dir, ["import", "contacts", join(dir, "a.json"), "--json"]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).stats).toMatchObject({ created: 2, errors: 0, total: 2 });
    expect((await all(dir)).map((x) => x.uuid).sort()).toEqual(["c-1", "c-8", "c-9"]);
    writeFileSync(join(dir, "cut.json"), JSON.stringify([{ name: "Ed", email: "ed@example.com" }, { name: "Flo", email: "flo@example.com" }]).slice(0, -3));
    const cut = await cli(dir, ["import", "contacts", join(dir, "cut.json")]);
    expect(cut.code).toBe(2);
    expect(cut.stderr).toContain("not valid JSON: it ends too early");
    expect(await all(dir)).toHaveLength(3);
  });
});

/**
 * Large imports (from WORKER_FROM_BYTES on) are read on a worker thread while the transaction writes
 * what it spooled. The results must be those of the one-thread import: the same counts, row numbers,
 * matching inside the file and against stored records, all-or-nothing --strict, and no spool left.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { WORKER_FROM_BYTES } from "../src/core/transfer/import";
import { adminSite, cli, MAIN, makeSite } from "./helpers/site";

const books = {
  fields: {
    title: { type: "text", required: true },
    year: { type: "number" },
    status: { type: "select", options: { new: "New", open: "Open", done: "Done" } },
    body: { type: "textarea" },
  },
};

const ROWS = 45_000;
/** Data rows (1-based, as errors_detail counts them) whose year is not a number. */
const BAD = [10, 40_000];
/** Row 30,000 repeats row 5's title: with the default rule it updates the record row 5 created. */
const REPEAT_AT = 30_000;
/** Row 44,000 names the record the site already holds. */
const STORED_AT = 44_000;

const STATUSES = ["new", "open", "done"];
const titleOf = (i: number) => (i === REPEAT_AT ? "Book 5" : i === STORED_AT ? "Stored book" : `Book ${i}`);

function bigCsv(): string {
  const lines = ["title,year,status,body"];
  for (let i = 1; i <= ROWS; i++) {
    const title = titleOf(i);
    const year = BAD.includes(i) ? "nineteen" : String(1900 + (i % 120));
    const body = i === REPEAT_AT ? "second edition" : `"Body of book ${i}, with a comma and ""quotes"", long enough for a realistic row."`;
    lines.push(`${title},${year},${STATUSES[i % 3]},${body}`);
  }
  return lines.join("\n") + "\n";
}

const dirs: string[] = [];
afterAll(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

async function site(): Promise<string> {
  const dir = makeSite({ defs: { books } });
  dirs.push(dir);
  writeFileSync(join(dir, "seed.json"), JSON.stringify([{ uuid: "stored-1", title: "Stored book", year: 1850, status: "new" }]));
  expect((await cli(dir, ["import", "books", join(dir, "seed.json")])).code).toBe(0);
  writeFileSync(join(dir, "big.csv"), bigCsv());
  expect(statSync(join(dir, "big.csv")).size).toBeGreaterThan(WORKER_FROM_BYTES);
  return dir;
}

type Rec = Record<string, unknown>;
const exported = async (dir: string): Promise<Rec[]> => {
  const r = await cli(dir, ["export", "books", "--format", "json"]);
  expect(r.code).toBe(0);
  const doc = JSON.parse(r.stdout) as Record<string, Rec>;
  delete doc._meta;
  return Object.values(doc);
};
const spools = (dir: string) => readdirSync(join(dir, "data")).filter((f) => f.endsWith(".spool"));

describe("a large import, read on a worker thread", () => {
  test("CLI: counts, rejected rows by number, matching in the file and against the store; no spool left", async () => {
    const dir = await site();
    const r = await cli(dir, ["import", "books", join(dir, "big.csv"), "--json", "--allow-errors"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.stats).toEqual({ imported: ROWS - 2, errors: 2, created: ROWS - 4, updated: 2, total: ROWS, matched: { title: 2 } });
    expect(out.errors_detail.map((e: { row: number; field: string }) => [e.row, e.field])).toEqual(BAD.map((row) => [row, "year"]));

    const recs = await exported(dir);
    expect(recs).toHaveLength(ROWS - 4 + 1);
    const byTitle = new Map(recs.map((x) => [x.title, x]));
    expect(byTitle.get("Book 5")).toMatchObject({ body: "second edition", year: 1900 + (REPEAT_AT % 120) });
    expect(byTitle.get("Stored book")).toMatchObject({ uuid: "stored-1", year: 1900 + (STORED_AT % 120) });
    expect(byTitle.get(`Book ${ROWS}`)).toMatchObject({ year: 1900 + (ROWS % 120), body: `Body of book ${ROWS}, with a comma and "quotes", long enough for a realistic row.` });
    expect(byTitle.has("Book 10")).toBe(false);
    expect(spools(dir)).toEqual([]);
  }, 120_000);

  test("CLI --strict: one rejected row and nothing is written (exit 3); --no-match: the stored title is not merged", async () => {
    const dir = await site();
    const strict = await cli(dir, ["import", "books", join(dir, "big.csv"), "--json", "--strict"]);
    expect(strict.code).toBe(3);
    expect(JSON.parse(strict.stdout)).toMatchObject({ rolled_back: true, stats: { imported: 0, errors: 2, created: 0, updated: 0, total: ROWS } });
    expect(await exported(dir)).toHaveLength(1);
    expect(spools(dir)).toEqual([]);

    const none = await cli(dir, ["import", "books", join(dir, "big.csv"), "--json", "--no-match", "--allow-errors"]);
    expect(none.code).toBe(0);
    expect(JSON.parse(none.stdout).stats).toEqual({ imported: ROWS - 2, errors: 2, created: ROWS - 2, updated: 0, total: ROWS, matched: {} });
    expect((await exported(dir)).filter((x) => x.title === "Stored book")).toHaveLength(2);
  }, 120_000);

  test("CLI: an unterminated quote near the end is named with its line, and nothing is written", async () => {
    const dir = await site();
    const lines = bigCsv().split("\n");
    const at = ROWS - 3; // data row ROWS-3 is file line ROWS-2 (the header is line 1)
    lines[at] = `Broken,1999,new,"this quote never closes`;
    writeFileSync(join(dir, "broken.csv"), lines.join("\n"));
    const r = await cli(dir, ["import", "books", join(dir, "broken.csv")]);
    expect(r.code).toBe(2);
    // The quote opens a value that runs on into the next rows' quotes: the line where it opened is named.
    expect(r.stderr).toMatch(new RegExp(`^resd: line ${at + 1}: .*quote`));
    expect(await exported(dir)).toHaveLength(1);
    expect(spools(dir)).toEqual([]);
  }, 120_000);
});

describe("a large import over HTTP", () => {
  let s: Awaited<ReturnType<typeof adminSite>>;
  beforeAll(async () => { s = await adminSite({ defs: { books } }); });
  afterAll(async () => { await s.cleanup(); });

  test("the same results as the CLI; the server answers reads meanwhile; search and totals see every row", async () => {
    expect((await s.apiJson("POST", "/api/v1/books", { uuid: "stored-1", title: "Stored book", year: 1850 })).status).toBe(201);
    const form = new FormData();
    form.append("file", new Blob([bigCsv()], { type: "text/csv" }), "big.csv");
    const pending = fetch(s.base + "/api/v1/books/import", { method: "POST", headers: { authorization: `Bearer ${s.token}` }, body: form });
    let answered = 0;
    let done = false;
    pending.finally(() => { done = true; });
    while (!done) {
      const h = await fetch(s.base + "/health");
      expect(h.status).toBe(200);
      answered++;
      await Bun.sleep(20);
    }
    const res = await pending;
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, any>;
    expect(body.stats).toEqual({ imported: ROWS - 2, errors: 2, created: ROWS - 4, updated: 2, total: ROWS, matched: { title: 2 } });
    expect(body.errors_detail.map((e: { row: number }) => e.row)).toEqual(BAD);
    expect(answered).toBeGreaterThan(1);

    const list = await s.apiJson("GET", "/api/v1/books?limit=1&filter=status:done");
    // The last row of each title sets its record's status.
    const status = new Map<string, string>();
    for (let i = 1; i <= ROWS; i++) if (!BAD.includes(i)) status.set(titleOf(i), STATUSES[i % 3]!);
    const expected = [...status.values()].filter((x) => x === "done").length;
    expect(list.body?.total).toBe(expected);
    const found = await s.apiJson("GET", `/api/v1/books?search=${encodeURIComponent("book 44999")}&limit=5`);
    expect(found.status).toBe(200);
    expect(Object.values(found.body?.books as Record<string, Rec>).map((x) => x.title)).toEqual(["Book 44999"]);
    expect(found.body?.total).toBe(1);
    expect(spools(s.dir)).toEqual([]);
  }, 120_000);

  const upload = async (text: string, name: string) => {
    const form = new FormData();
    form.append("file", new Blob([text], { type: "text/csv" }), name);
    const res = await fetch(s.base + "/api/v1/books/import", { method: "POST", headers: { authorization: `Bearer ${s.token}` }, body: form });
    expect(res.status).toBe(200);
    return ((await res.json()) as { stats: Record<string, unknown> }).stats;
  };
  const count = async () => (await s.apiJson("GET", "/api/v1/books?limit=1")).body?.total as number;

  test("two imports of the same large file at once: the second matches what the first wrote", async () => {
    const before = await count();
    const text = bigCsv().replaceAll("Book ", "Twice ");
    const both = await Promise.all([upload(text, "a.csv"), upload(text, "b.csv")]);
    const created = both.map((x) => x.created as number).sort((a, b) => a - b);
    // The first: row 30,000 repeats row 5 and row 44,000 names the stored record; the second updates every valid row.
    expect(created).toEqual([0, ROWS - 4]);
    expect(both.map((x) => x.updated as number).sort((a, b) => a - b)).toEqual([2, ROWS - 2]);
    expect((await count()) - before).toBe(ROWS - 4);
  }, 120_000);

  test("two imports of the same small file at once (read on the request's thread): no duplicates either", async () => {
    const before = await count();
    const text = "title,year\n" + Array.from({ length: 2000 }, (_, i) => `Small ${i},${1900 + (i % 100)}`).join("\n");
    const both = await Promise.all([upload(text, "a.csv"), upload(text, "b.csv")]);
    expect(both.map((x) => x.created as number).sort((a, b) => a - b)).toEqual([0, 2000]);
    expect(both.map((x) => x.updated as number).sort((a, b) => a - b)).toEqual([0, 2000]);
    expect((await count()) - before).toBe(2000);
  }, 60_000);
});

describe("an interrupted import", () => {
  const interrupted = async (dir: string, args: string[], stdin: "pipe" | "ignore", ready: () => boolean, signal: "SIGINT" | "SIGTERM") => {
    const p = Bun.spawn([process.execPath, MAIN, "import", "books", ...args, "--dir", dir], { cwd: dir, env: { ...process.env, TMPDIR: dir }, stdin, stdout: "pipe", stderr: "pipe" });
    if (stdin === "pipe") {
      const sink = p.stdin as import("bun").FileSink;
      sink.write("title,year\nFrom stdin,1999\n");
      await sink.flush();
    }
    for (const end = Date.now() + 30_000; !ready() && Date.now() < end; ) await Bun.sleep(10);
    expect(ready()).toBe(true);
    p.kill(signal);
    const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    return { stdout, stderr, code };
  };

  test("TERM while a large file is written: exit 143, nothing written, no spool left", async () => {
    const dir = await site();
    const rows = Array.from({ length: 150_000 }, (_, i) => `Book ${i},${1900 + (i % 120)},new,"a body long enough to make this file take a few seconds, row ${i}"`);
    writeFileSync(join(dir, "huge.csv"), ["title,year,status,body", ...rows].join("\n"));
    // The spool holds prepared rows once the reading worker has read some: the import is under way.
    const started = () => { try { return spools(dir).some((f) => statSync(join(dir, "data", f)).size > 0); } catch { return false; } };
    const r = await interrupted(dir, [join(dir, "huge.csv")], "ignore", started, "SIGTERM");
    expect(r.stderr).toBe("resd: interrupted by SIGTERM: nothing was written\n");
    expect(r.code).toBe(143);
    expect(await exported(dir)).toHaveLength(1);
    expect(spools(dir)).toEqual([]);
  }, 120_000);

  test("Ctrl-C while standard input is silent: exit 130, its temporary copy removed", async () => {
    const dir = await site();
    const copies = () => readdirSync(dir).filter((f) => f.startsWith("resd-import-"));
    const r = await interrupted(dir, ["-"], "pipe", () => copies().length > 0, "SIGINT");
    expect(r.stderr).toBe("resd: interrupted by SIGINT: nothing was written\n");
    expect(r.code).toBe(130);
    expect(copies()).toEqual([]);
    expect(await exported(dir)).toHaveLength(1);
  }, 60_000);
});

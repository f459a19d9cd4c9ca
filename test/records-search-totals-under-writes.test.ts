/**
 * Search totals while records are created and deleted: every total must be a count the collection
 * really had. The writer keeps the number of matching records at N or N+1 (create one, then delete
 * an older one); readers ask totals meanwhile. With one read worker a total's steps (candidates,
 * then the count) run one after another with writes landing in between; with two, a short term is
 * counted in two parts at once.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { adminSite } from "./helpers/site";

const notes = { fields: { name: { type: "text" } } };
const SEED = 4000;

for (const workers of ["1", "2"]) describe(`RESD_READ_WORKERS=${workers}`, () => {
  let s: Awaited<ReturnType<typeof adminSite>>;

  beforeAll(async () => {
    s = await adminSite({ defs: { notes }, env: { RESD_READ_WORKERS: workers } });
    const rows = Array.from({ length: SEED }, (_, i) => ({ name: `zqx item ${i}` }));
    const form = new FormData();
    form.append("file", new Blob([JSON.stringify(rows)], { type: "application/json" }), "seed.json");
    const imp = await fetch(`${s.base}/api/v1/notes/import`, { method: "POST", headers: { authorization: `Bearer ${s.token}` }, body: form });
    expect(imp.status).toBe(200);
  }, 30_000);
  afterAll(async () => {
    await s.cleanup();
  });

  test("totals of an indexed term and of a short term stay within the counts the collection had", async () => {
    const all = (await s.apiJson("GET", "/api/v1/notes?search=zqx")).body!;
    const ids = Object.keys(all.notes);
    expect(ids.length).toBe(SEED);
    let n = SEED;
    let stop = false;
    const wrong: string[] = [];
    let reads = 0;
    const writer = (async () => {
      // At least 150 create/delete pairs, and on until the readers have read a good many totals in
      // between (a loaded machine reads fewer per write): the test is about reads amid writes.
      for (let i = 0; i < 150 || (reads <= 100 && i < 1500); i++) {
        const created = await s.apiJson("POST", "/api/v1/notes", { name: `zqx new ${i}` });
        ids.push(Object.keys(created.body!.notes)[0]);
        n++;
        const victim = ids.splice(Math.floor(Math.random() * 1000), 1)[0];
        expect((await s.apiJson("DELETE", `/api/v1/notes/${victim}`)).status).toBe(200);
        n--;
      }
      stop = true;
    })();
    const readers = ["zqx", "zq", "zqx", "zq"].map(async (term) => {
      while (!stop) {
        const total = (await s.apiJson("GET", `/api/v1/notes?search=${term}&limit=1`)).body!.total as number;
        reads++;
        // The count is N between writes and N+1 between a create and its delete.
        if (total !== SEED && total !== SEED + 1) wrong.push(`${term}: ${total}`);
      }
    });
    await writer;
    await Promise.all(readers);
    expect(n).toBe(SEED);
    expect(reads).toBeGreaterThan(100);
    expect(wrong).toEqual([]);
    expect((await s.apiJson("GET", "/api/v1/notes?search=zqx&limit=1")).body!.total).toBe(SEED);
    expect((await s.apiJson("GET", "/api/v1/notes?search=zq&limit=1")).body!.total).toBe(SEED);
  }, 60_000);
});

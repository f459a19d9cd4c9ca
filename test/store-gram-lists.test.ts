/**
 * The record ids per search trigram kept between commits (GramLists): the intersection, the cache's
 * own rules, and searches through the real server that stay exact while lists are kept and records
 * are created, updated, deleted and imported by another process.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { asciiTrigrams, GramLists, intersect } from "../src/core/store/gram-lists";
import { adminSite, cli } from "./helpers/site";

/** A small seeded generator, so a failure can be replayed. */
function rng(seed: number) {
  let x = seed >>> 0 || 1;
  return () => ((x = (x * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

describe("intersect", () => {
  const naive = (lists: number[][]) => lists[0]!.filter((id) => lists.every((l) => l.includes(id)));
  test("equals a naive intersection for lists alike in length and far apart in length", () => {
    const rand = rng(7);
    for (let round = 0; round < 300; round++) {
      const k = 1 + Math.floor(rand() * 4);
      const lists = Array.from({ length: k }, (_, i) => {
        const n = Math.floor(rand() * (i === 0 && round % 3 === 0 ? 2000 : 120));
        return [...new Set(Array.from({ length: n }, () => Math.floor(rand() * 400)))].sort((a, b) => a - b);
      });
      expect(intersect(lists.map((l) => Int32Array.from(l)))).toEqual(naive(lists));
    }
    expect(intersect([])).toEqual([]);
    expect(intersect([Int32Array.from([1, 2]), new Int32Array(0)])).toEqual([]);
  });
});

describe("GramLists", () => {
  const ids = (l: ArrayLike<number> | undefined) => (l ? Array.from(l) : undefined);

  test("a list read across a commit of its resource, or another process's commit, is not kept", () => {
    let version = 1;
    const g = new GramLists(1 << 20, () => version);
    const gen = g.generation("a");
    g.committed("a", 10, () => []);
    g.put("a", "abc", [1, 2], gen);
    expect(g.get("a", "abc")).toBeUndefined();
    const gen2 = g.generation("a");
    version = 2;
    g.put("a", "abc", [1, 2], gen2);
    expect(g.get("a", "abc")).toBeUndefined();
    g.put("a", "abc", [1, 2], g.generation("a"));
    expect(ids(g.get("a", "abc"))).toEqual([1, 2]);
    // A commit of another resource leaves it.
    g.committed("b", null, () => []);
    expect(ids(g.get("a", "abc"))).toEqual([1, 2]);
    version = 3;
    expect(g.get("a", "abc")).toBeUndefined();
  });

  test("creates add their ids to the lists of the trigrams they hold (ASCII case folded); updates and deletes drop the resource", () => {
    const g = new GramLists(1 << 20, () => 1);
    for (const gram of ["abc", "xyz", "é b"]) g.put("r", gram, [3, 5], g.generation("r"));
    g.committed("r", 5, (above) => {
      expect(above).toBe(5);
      return [{ id: 6, text: "zz ABC zz" }, { id: 7, text: "nothing" }, { id: 8, text: "abcxyz" }];
    });
    expect(ids(g.get("r", "abc"))).toEqual([3, 5, 6, 8]);
    expect(ids(g.get("r", "xyz"))).toEqual([3, 5, 8]);
    expect(ids(g.get("r", "é b"))).toEqual([3, 5]);
    g.committed("r", null, () => []);
    expect(g.get("r", "abc")).toBeUndefined();
  });

  test("ids below ones already listed (commits that ended out of id order) go in their place, once; the lists stay sorted", () => {
    const g = new GramLists(1 << 20, () => 1);
    g.put("r", "abc", [10, 20, 30], g.generation("r"));
    g.committed("r", 4, () => [{ id: 5, text: "abc" }, { id: 25, text: "abc" }, { id: 40, text: "abc" }]);
    expect(ids(g.get("r", "abc"))).toEqual([5, 10, 20, 25, 30, 40]);
    // The same id again (told twice) is not listed twice.
    g.committed("r", 19, () => [{ id: 20, text: "abc" }, { id: 22, text: "abc" }]);
    expect(ids(g.get("r", "abc"))).toEqual([5, 10, 20, 22, 25, 30, 40]);
    // Many ids into one list, in random order: sorted, and equal to a plain sort.
    const rand = rng(11);
    const want = new Set([5, 10, 20, 22, 25, 30, 40]);
    for (let round = 0; round < 200; round++) {
      const id = 1 + Math.floor(rand() * 5000);
      want.add(id);
      g.committed("r", id - 1, () => [{ id, text: "abc" }]);
    }
    expect(ids(g.get("r", "abc"))).toEqual([...want].sort((x, y) => x - y));
  });

  test("a create of more rows than it reads drops the lists instead", () => {
    const g = new GramLists(1 << 20, () => 1);
    g.put("r", "abc", [1], g.generation("r"));
    g.committed("r", 1, (_above, limit) => Array.from({ length: limit }, (_, i) => ({ id: i + 2, text: "abc" })));
    expect(g.get("r", "abc")).toBeUndefined();
  });

  test("stays within its bytes, least recently used first; unsorted or too large ids are refused", () => {
    const g = new GramLists(64 * 1024, () => 1);
    const list = Array.from({ length: 1000 }, (_, i) => i + 1);
    for (let i = 0; i < 40; i++) {
      g.put("r", `g${i}`, list, g.generation("r"));
      g.get("r", "g0"); // kept in use
      expect(g.heldBytes).toBeLessThanOrEqual(64 * 1024);
    }
    expect(g.get("r", "g0")).toBeDefined();
    expect(g.get("r", "g1")).toBeUndefined();
    expect(g.get("r", "g39")).toBeDefined();
    g.put("r", "u", [3, 2], g.generation("r"));
    expect(g.get("r", "u")).toBeUndefined();
    g.put("r", "big", [1, 2 ** 31], g.generation("r"));
    expect(g.get("r", "big")).toBeUndefined();
  });

  test("asciiTrigrams folds A-Z only and skips windows with other characters", () => {
    expect([...asciiTrigrams("AbÜcd")].sort()).toEqual([]);
    expect([...asciiTrigrams("ABcd")].sort()).toEqual(["abc", "bcd"]);
  });
});

describe("search with kept lists through the server", () => {
  const WORDS = ["amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "heron", "inlet", "juniper", "kestrel", "larch", "maple", "nettle", "osprey", "plover"];
  const TERMS = ["amber", "AMB", "rch", "cedar del", "juniper", "estr", "ple", "zephyr", "phyri", "quokka", "wombat", "mbat", "ove", "er b", "nettle osp"];
  let s: Awaited<ReturnType<typeof adminSite>>;
  /** What the records' titles are, as the test wrote them. */
  const model = new Map<string, string>();
  const rand = rng(42);
  const title = () => Array.from({ length: 3 }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(" ");

  beforeAll(async () => {
    s = await adminSite({ defs: { places: { fields: { title: { type: "text" }, n: { type: "number" } } } } });
    const rows = Array.from({ length: 600 }, (_, i) => ({ title: title(), n: i }));
    const form = new FormData();
    form.append("file", new Blob([JSON.stringify(rows)], { type: "application/json" }), "p.json");
    const imp = await fetch(`${s.base}/api/v1/places/import?match=uuid`, { method: "POST", headers: { authorization: `Bearer ${s.token}` }, body: form });
    expect(imp.status).toBe(200);
    const all = (await s.apiJson("GET", "/api/v1/places?limit=1000")).body!.places as Record<string, { title: string }>;
    for (const [uuid, r] of Object.entries(all)) model.set(uuid, r.title);
    expect(model.size).toBe(600);
  });
  afterAll(async () => { await s.cleanup(); });

  const expected = (term: string) => [...model].filter(([, t]) => t.toLowerCase().includes(term.toLowerCase())).map(([u]) => u).sort();
  async function checkAll(step: string) {
    for (const term of TERMS) {
      const body = (await s.apiJson("GET", `/api/v1/places?search=${encodeURIComponent(term)}&limit=1000`)).body!;
      const want = expected(term);
      expect({ step, term, found: Object.keys(body.places).sort() }).toEqual({ step, term, found: want });
      expect(body.total).toBe(want.length);
    }
  }

  test("creates, updates, deletes and another process's import are all seen by searches whose lists were kept", async () => {
    await checkAll("first searches (lists read)");
    await checkAll("again (lists kept)");

    for (let i = 0; i < 5; i++) {
      const t = `${title()} zephyrine ${i}`;
      const body = (await s.apiJson("POST", "/api/v1/places", { title: t, n: 1000 + i })).body!;
      model.set(Object.keys(body.places)[0]!, t);
    }
    await checkAll("after creates");

    const [old] = [...model].find(([, t]) => t.includes("amber")) ?? [];
    expect(old).toBeDefined();
    const updated = "quokka grove";
    expect((await s.apiJson("PUT", `/api/v1/places/${old}`, { title: updated })).status).toBe(200);
    model.set(old!, updated);
    await checkAll("after an update");

    const [gone] = [...model].find(([, t]) => t.includes("juniper")) ?? [];
    expect((await s.apiJson("DELETE", `/api/v1/places/${gone}`)).status).toBe(200);
    model.delete(gone!);
    await checkAll("after a delete");

    // Lists kept again, then another process writes: the server must not trust them.
    await checkAll("lists kept again");
    const file = join(s.dir, "more.csv");
    await Bun.write(file, "title,n\nwombat cedar,2000\nthe WOMBAT,2001\n");
    const r = await cli(s.dir, ["import", "places", file]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    const all = (await s.apiJson("GET", "/api/v1/places?limit=1000")).body!.places as Record<string, { title: string }>;
    for (const [uuid, rec] of Object.entries(all)) if (!model.has(uuid)) model.set(uuid, rec.title);
    expect(model.size).toBe(600 + 5 - 1 + 2);
    await checkAll("after another process's import");
  });
});

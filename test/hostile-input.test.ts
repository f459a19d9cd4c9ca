/**
 * Hostile and odd requests: every one gets a clear 4xx envelope (or is served correctly), never a
 * 500, and nothing stored can break later lists. Each case failed on the code before issue 12.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { adminSite, siteEnv } from "./helpers/site";
import { SQL } from "bun";

const notes = {
  languages: ["en", "de"],
  fields: {
    title: { type: "text", required: true },
    body: { type: "html", multi: true },
    intro: { type: "html", i18n: true, multi: true },
    slug: { type: "slug", source: "title", i18n: true },
    photo: { type: "image" },
    attachment: { type: "file" },
    pictures: { type: "gallery" },
    sections: { type: "group", fields: { heading: { type: "text", required: true }, text: { type: "html" }, n: { type: "number", max: 10 } } },
    free: { type: "group" },
  },
  unique: ["slug"],
  sitemap: { url: "https://example.com/notes/[#record.uuid#]" },
};

let s: Awaited<ReturnType<typeof adminSite>>;
let uuid: string;
beforeAll(async () => {
  s = await adminSite({ defs: { notes, bulk: { fields: { body: { type: "textarea" } } } } });
  const r = await s.apiJson("POST", "/api/v1/notes", { title: "first" });
  uuid = Object.keys(r.body!.notes)[0];
});
afterAll(async () => { await s.cleanup(); });

/** One raw HTTP exchange; returns the status line's code and the body. */
function raw(text: string): Promise<{ status: number; body: string }> {
  const url = new URL(s.base);
  return new Promise((resolve, reject) => {
    const sock = connect(Number(url.port), url.hostname);
    let out = "";
    sock.on("data", (d) => (out += d.toString()));
    sock.on("error", reject);
    sock.on("close", () => resolve({ status: Number(out.split(" ")[1]), body: out.slice(out.indexOf("\r\n\r\n") + 4) }));
    sock.write(text);
    setTimeout(() => sock.end(), 1500);
  });
}
const auth = () => `Authorization: Bearer ${s.token}\r\n`;

describe("request target and Host", () => {
  test("HTTP/1.0 without Host is served on a fixed base", async () => {
    const r = await raw(`GET /api/v1/notes?limit=5 HTTP/1.0\r\n${auth()}\r\n`);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body).notes[uuid].title).toBe("first");
  });

  // Short hosts ("x", "ab:1") put the path's first "/" before the offset a router may cut at.
  for (const host of ["a b", "a/b", "a:99999", "x", "a:1", "[::1]"]) {
    test(`Host "${host}": lists, exports, sitemap and sign-in answer without a 500`, async () => {
      for (const path of ["/api/v1/notes?limit=5", "/api/v1/notes/export?format=csv", "/sitemap.xml", "/api/v1/notes?search=x"]) {
        const r = await raw(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\n${auth()}Connection: close\r\n\r\n`);
        expect(r.status, path).toBe(200);
      }
      const body = JSON.stringify({ email: "admin@example.com", password: "admin-password" });
      const r = await raw(`POST /api/v1/session HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
      expect(r.status).toBe(200);
    });
  }

  test("the path is never cut at a fixed offset: /static/img/api/v1/notes/<uuid> is no record", async () => {
    const r = await raw(`GET /static/img/api/v1/notes/${uuid} HTTP/1.0\r\n${auth()}\r\n`);
    expect(r.status).toBe(404);
    expect(r.body).not.toContain('"first"');
    await Bun.sleep(100);
    const line = s.output().split("\n").find((l) => l.includes(`/static/img/api/v1/notes/${uuid}`));
    expect(line).toBeDefined();
    expect(line).toContain(" 404 ");
  });
});

describe("query size", () => {
  const get = (q: string) => s.apiJson("GET", `/api/v1/notes?${q}`);
  test("too many sort terms, filter conditions, alternatives or a long search: 400 naming the limit", async () => {
    const cases: [string, string][] = [
      [`sort=${Array.from({ length: 2100 }, () => "title").join(",")}`, "at most 10"],
      [`filter=${Array.from({ length: 1100 }, () => "title:x").join(",")}`, "at most 32"],
      [`filter=title:${Array.from({ length: 1100 }, (_, i) => `v${i}`).join("||")}`, "at most 100"],
      [`search=${"x".repeat(12_000)}`, "at most 200"],
    ];
    for (const [q, limit] of cases) {
      const r = await get(q);
      expect(r.status).toBe(400);
      expect(r.body!.message).toBe("INVALID_DATA");
      expect(r.body!.details).toContain(limit);
    }
    expect((await get(`sort=${Array.from({ length: 10 }, () => "title|asc").join(",")}`)).status).toBe(200);
  });

  test("a JSON body nested 200,000 deep: 400", async () => {
    const r = await s.apiJson("POST", "/api/v1/notes", `${"[".repeat(200_000)}${"]".repeat(200_000)}`);
    expect(r.status).toBe(400);
    expect(r.body!.details).toContain("64");
    const obj = await s.apiJson("PUT", `/api/v1/notes/${uuid}`, `{"title":"x","free":${'{"a":'.repeat(100)}1${"}".repeat(100)}}`);
    expect(obj.status).toBe(400);
  });
});

describe("stored values", () => {
  test("group rows are validated against their fields, with the path of the bad value", async () => {
    const bad = await s.apiJson("POST", "/api/v1/notes", { title: "g", sections: [{ heading: "a" }, { heading: "b", n: 11 }] });
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.body!.errors)).toEqual(["sections[1].n"]);
    const unknown = await s.apiJson("POST", "/api/v1/notes", { title: "g", sections: [{ heading: "a", evil: 1 }] });
    expect(unknown.status).toBe(422);
    expect(Object.keys(unknown.body!.errors)).toEqual(["sections[0].evil"]);
    const missing = await s.apiJson("POST", "/api/v1/notes", { title: "g", sections: [{ text: "<p>x</p>" }] });
    expect(Object.keys(missing.body!.errors)).toEqual(["sections[0].heading"]);
    const good = await s.apiJson("POST", "/api/v1/notes", { title: "g", sections: [{ heading: "a", text: "<p>ok<script>alert(1)</script></p>", n: "3" }] });
    expect(good.status).toBe(201);
    const row = Object.values(good.body!.notes as Record<string, any>)[0].sections[0];
    expect(row).toEqual({ heading: "a", text: "<p>ok</p>", n: 3 });
  });

  test("a value nested 1,001 deep is refused, and lists stay healthy", async () => {
    let deep: unknown = 1;
    for (let i = 0; i < 1001; i++) deep = { a: deep };
    const text = JSON.stringify({ title: "deep", free: deep });
    const r = await s.apiJson("POST", "/api/v1/notes", text);
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(r.status).toBeLessThan(500);
    const nested = await s.apiJson("POST", "/api/v1/notes", { title: "deep", free: { a: { b: 1 } } });
    expect(nested.status).toBe(422);
    expect(Object.keys(nested.body!.errors)).toEqual(["free.a"]);
    for (const q of ["filter=title:deep", "sort=title|desc&limit=5", "search=deep"]) expect((await s.apiJson("GET", `/api/v1/notes?${q}`)).status).toBe(200);
  });

  test("every value of every html field is cleaned: multi, and multi with i18n", async () => {
    const r = await s.apiJson("POST", "/api/v1/notes", { title: "h", body: ["<img src=x onerror=alert(1)>", "<b>fine</b>"], intro: { en: ["<script>x</script><i>y</i>"] } });
    expect(r.status).toBe(201);
    const rec = Object.values(r.body!.notes as Record<string, any>)[0];
    expect(JSON.stringify(rec.body)).not.toContain("onerror");
    expect(rec.body[1]).toBe("<b>fine</b>");
    expect(rec.intro.en[0]).toBe("<i>y</i>");
  });

  test("unique on an i18n field holds per language", async () => {
    expect((await s.apiJson("POST", "/api/v1/notes", { title: "u1", slug: { en: "hello-world", de: "hallo-welt" } })).status).toBe(201);
    const dup = await s.apiJson("POST", "/api/v1/notes", { title: "u2", slug: { en: "hello-world" } });
    expect(dup.status).toBe(422);
    expect(dup.body!.errors.slug).toContain("hello-world");
    expect((await s.apiJson("POST", "/api/v1/notes", { title: "u3", slug: { en: "other", de: "hallo-welt" } })).status).toBe(422);
    expect((await s.apiJson("POST", "/api/v1/notes", { title: "u4", slug: { en: "hallo-welt" } })).status).toBe(201);
    expect((await s.apiJson("GET", "/api/v1/notes?filter=slug:hello-world")).body!.count).toBe(1);
  });

  test("U+0000 is refused in any text (a field, a group row, a translation, a free group's key): 422 naming the field; a login that sends one is refused like an unknown e-mail", async () => {
    for (const [field, value] of [["title", "a\u0000b"], ["sections", [{ heading: "h\u0000" }]], ["slug", { en: "x\u0000" }], ["free", { "k\u0000": 1 }]] as const) {
      const r = await s.apiJson("POST", "/api/v1/notes", { title: "ok", [field]: value });
      expect(r.status).toBe(422);
      expect(r.body!.errors[field]).toContain("U+0000");
    }
    const bad = await s.apiJson("POST", "/api/v1/bulk", { body: "\u0000" });
    expect(bad.status).toBe(422);
    const login = (email: string) => fetch(`${s.base}/api/v1/auth/token`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email, password: "whatever-long" }) });
    const unknown = (await login("nobody@example.com")).status;
    expect(unknown).toBeLessThan(500);
    expect((await login("a\u0000@example.com")).status).toBe(unknown);
    expect((await s.apiJson("GET", "/api/v1/notes?filter=title:a%00b")).status).toBe(400);
    expect((await s.apiJson("GET", "/api/v1/notes?search=a%00")).status).toBe(400);
    // Nothing was stored: lists and filters over the resource still answer.
    const list = await s.apiJson("GET", "/api/v1/notes?filter=title:ok");
    expect(list.status).toBe(200);
  });

  test("image and file values name a file of the media library", async () => {
    const bad = await s.apiJson("POST", "/api/v1/notes", { title: "f", photo: "not-a-file" });
    expect(bad.status).toBe(422);
    expect(bad.body!.errors.photo).toContain("media library");
    expect((await s.apiJson("POST", "/api/v1/notes", { title: "f", pictures: ["0123456789abcdef0123456789abcdef"] })).status).toBe(422);
    const form = new FormData();
    form.append("file", new Blob(["hello file"], { type: "text/plain" }), "hello.txt");
    const up = await fetch(`${s.base}/api/v1/.files`, { method: "POST", headers: { authorization: `Bearer ${s.token}` }, body: form });
    const md5 = Object.keys(((await up.json()) as any).files)[0];
    expect((await s.apiJson("POST", "/api/v1/notes", { title: "f", attachment: md5 })).status).toBe(201);
    // An import reports such rows one by one; ?missing_files=allow brings records before their files.
    const csv = `title,attachment\nok,${md5}\nbad,ffffffffffffffffffffffffffffffff\n`;
    const imp = async (q: string) => {
      const f = new FormData();
      f.append("file", new Blob([csv]), "n.csv");
      return (await (await fetch(`${s.base}/api/v1/notes/import${q}`, { method: "POST", headers: { authorization: `Bearer ${s.token}` }, body: f })).json()) as any;
    };
    const strictRows = await imp("");
    expect(strictRows.stats).toMatchObject({ created: 1, errors: 1 });
    expect(strictRows.errors_detail[0]).toMatchObject({ row: 2, field: "attachment" });
    expect((await imp("?missing_files=allow")).stats).toMatchObject({ errors: 0 });
  });
});

describe("streamed lists", () => {
  /**
   * Writes a little and checkpoints: busy while any connection still reads an older snapshot. On
   * PostgreSQL: busy while a connection sits in a transaction (a stream's cursor between fetches).
   */
  async function checkpointBusy(): Promise<number> {
    const url = siteEnv(s.dir).RESD_DATABASE_URL;
    if (url) {
      const pg = new SQL(url, { max: 1 });
      const [row] = await pg.unsafe("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction'");
      await pg.close();
      return row.n > 0 ? 1 : 0;
    }
    const db = new Database(join(s.dir, "data", "resd.db"));
    db.exec("PRAGMA busy_timeout=200; CREATE TABLE IF NOT EXISTS probe(x); INSERT INTO probe VALUES (1);");
    const r = db.query("PRAGMA wal_checkpoint(TRUNCATE)").get() as { busy: number };
    db.close();
    return r.busy;
  }

  test("release their database connection when clients stop reading and go away", async () => {
    const form = new FormData();
    const rows = Array.from({ length: 12000 }, (_, i) => `${i} ${"y".repeat(1000)}`).join("\n");
    form.append("file", new Blob([`body\n${rows}\n`]), "bulk.csv");
    const imp = await fetch(`${s.base}/api/v1/bulk/import`, { method: "POST", headers: { authorization: `Bearer ${s.token}` }, body: form });
    expect(((await imp.json()) as { stats: { created: number } }).stats.created).toBe(12000);
    const url = new URL(s.base);
    // Unpaged lists stream; each client takes the head and 200 KB, then stops reading.
    const socks = await Promise.all(Array.from({ length: 3 }, () => new Promise<ReturnType<typeof connect>>((resolve) => {
      const sock = connect(Number(url.port), url.hostname);
      let got = 0;
      sock.on("data", (d) => {
        got += d.length;
        if (got > 200_000) { sock.pause(); resolve(sock); }
      });
      sock.write(`GET /api/v1/bulk HTTP/1.1\r\nHost: localhost\r\n${auth()}\r\n`);
    })));
    expect(await checkpointBusy()).toBe(1); // the streams hold their snapshots
    for (const sock of socks) sock.destroy();
    let busy = 1;
    for (let i = 0; i < 40 && busy; i++) {
      await Bun.sleep(50);
      busy = await checkpointBusy();
    }
    expect(busy).toBe(0);
    expect((await fetch(`${s.base}/health`)).status).toBe(200);
  });
});

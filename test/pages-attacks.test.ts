/**
 * Attacks on `.pages` (issue 34): paths, texts, permissions and concurrency a hostile or careless caller
 * tries. Each test states what must hold; written by an attacker, kept as guards.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { adminSite, cli, makeSite, serve, type Server } from "./helpers/site";
import { addUser, call, tokenFor } from "./helpers/access";

const md5 = (s: string) => new Bun.CryptoHasher("md5").update(s).digest("hex");

// ---------------------------------------------------------------------------------------------
// .pages
// ---------------------------------------------------------------------------------------------

describe(".pages under attack", () => {
  const notes = { fields: { title: { type: "text", required: true }, slug: { type: "text" } }, sitemap: { url: "/notes/[#record.slug#]" } };
  const messages = { fields: { text: { type: "text", required: true } } };
  let s: Awaited<ReturnType<typeof adminSite>>;
  const tokens: Record<string, string> = {};
  let outside = "";
  const as = (who: string, method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
    call(s.base, method, path, { token: who === "anonymous" ? undefined : tokens[who], body, headers });
  const uriFiles = (): string[] => {
    const out: string[] = [];
    const walk = (d: string, rel: string) => {
      if (!existsSync(d)) return;
      for (const e of readdirSync(d, { withFileTypes: true })) {
        if (e.isDirectory()) walk(join(d, e.name), `${rel}${e.name}/`);
        else out.push(`${rel}${e.name}`);
      }
    };
    walk(join(s.dir, "ext/uri"), "");
    return out.sort();
  };
  const listed = async (kind = "route") => Object.values((await as("admin", "GET", `/api/v1/.pages?kind=${kind}&limit=1000`)).body!.pages as Record<string, any>).map((p) => p.url as string);

  beforeAll(async () => {
    s = await adminSite({ defs: { notes, messages }, files: { "ext/uri/about/index.tpl": "About us\n" } });
    for (const [name, permissions] of Object.entries({ viewer: ["view-.pages"], manager: ["manage-.pages"], notesonly: ["view-notes"], low: ["view-notes"] })) {
      const r = await s.apiJson("POST", "/api/v1/roles", { name, permissions });
      if (r.status !== 201) throw new Error(JSON.stringify(r.body));
      await addUser(s.dir, `${name}@example.com`, "a-password-1", { role: name, api: true });
      tokens[name] = await tokenFor(s.base, `${name}@example.com`, "a-password-1");
    }
    tokens.admin = s.token;
    outside = mkdtempSync(join(tmpdir(), "resd-attack-outside-"));
    expect((await s.apiJson("POST", "/api/v1/notes", { title: "Hello", slug: "hello" })).status).toBe(201);
  }, 120_000);
  afterAll(async () => {
    await s?.cleanup();
    rmSync(outside, { recursive: true, force: true });
  });

  // ---- paths ----------------------------------------------------------------------------------

  test("a URL whose last segment is the route file's own name (/x/index.tpl) is refused, or else listed and editable", async () => {
    const r = await as("admin", "POST", "/api/v1/.pages", { url: "/trap/index.tpl", text: "inner" });
    if (r.status === 201) {
      // Accepted: then it must be a page like any other — listed, and editable by its id.
      expect(await listed()).toContain("/trap/index.tpl");
      const put = await as("admin", "PUT", `/api/v1/.pages/${md5("/trap/index.tpl")}`, { text: "inner 2" });
      expect(put.status).toBe(200);
    } else {
      expect(r.status).toBe(400);
      expect(r.body!.message).toBe("INVALID_DATA");
    }
  });

  test("a route file whose place is taken by a folder (ext/uri/x/index.tpl/ …): POST /x is a 409 naming it, not a 500, nothing left behind", async () => {
    // The API refuses a URL with an index.tpl segment (above); by hand (or git) the folder can still be made.
    expect((await as("admin", "POST", "/api/v1/.pages", { url: "/folded/index.tpl/inner", text: "inner" })).status).toBe(400);
    mkdirSync(join(s.dir, "ext/uri/folded/index.tpl/inner"), { recursive: true });
    writeFileSync(join(s.dir, "ext/uri/folded/index.tpl/inner/index.tpl"), "inner");
    const before = uriFiles();
    const r = await as("admin", "POST", "/api/v1/.pages", { url: "/folded", text: "outer" });
    expect(r.status).toBe(409);
    expect(r.body!.message).toBe("RESOURCE_EXISTS");
    expect(r.body!.details).toContain("ext/uri/folded/index.tpl is a folder");
    expect(uriFiles()).toEqual(before);
    expect((await as("admin", "GET", `/api/v1/.pages/${md5("/folded")}/history`)).status).toBe(404);
    rmSync(join(s.dir, "ext/uri/folded"), { recursive: true });
  });

  test("a file where a folder of the URL should be: 409, nothing written", async () => {
    // /about/index.tpl is a file; /about/index.tpl/deeper needs it to be a folder.
    const before = uriFiles();
    const r = await as("admin", "POST", "/api/v1/.pages", { url: "/about/index.tpl/deeper", text: "x" });
    expect([400, 409]).toContain(r.status);
    expect(uriFiles()).toEqual(before);
    expect(readFileSync(join(s.dir, "ext/uri/about/index.tpl"), "utf8")).toBe("About us\n");
    // Any other file in the way: ext/uri/plain is a file, /plain/deeper needs it to be a folder.
    writeFileSync(join(s.dir, "ext/uri/plain"), "not a folder");
    const before2 = uriFiles();
    const r2 = await as("admin", "POST", "/api/v1/.pages", { url: "/plain/deeper/still", text: "x" });
    expect(r2.status).toBe(409);
    expect(r2.body!.details).toContain("ext/uri/plain is a file");
    expect(uriFiles()).toEqual(before2);
    rmSync(join(s.dir, "ext/uri/plain"));
  });

  test("a folder on the way that is a symbolic link, even one staying inside: refused with 400, nothing written", async () => {
    mkdirSync(join(s.dir, "ext/uri/real-inside"), { recursive: true });
    symlinkSync(join(s.dir, "ext/uri/real-inside"), join(s.dir, "ext/uri/link-inside"));
    try {
      const before = uriFiles();
      const r = await as("admin", "POST", "/api/v1/.pages", { url: "/link-inside/x", text: "x" });
      expect(r.status).toBe(400);
      expect(r.body!.details).toContain("ext/uri/link-inside is a symbolic link");
      expect(uriFiles()).toEqual(before);
    } finally {
      rmSync(join(s.dir, "ext/uri/link-inside"));
      rmSync(join(s.dir, "ext/uri/real-inside"), { recursive: true });
    }
  });

  const lookalikes: [string, string][] = [
    ["one dot leader ․․ (U+2024)", "/\u2024\u2024/x"],
    ["fullwidth full stop ．． (U+FF0E)", "/\uff0e\uff0e/x"],
    ["fullwidth solidus ／ (U+FF0F)", "/a\uff0f..\uff0fb"],
    ["division slash ∕ (U+2215)", "/a\u2215b"],
    ["zero-width space", "/a\u200bb"],
    ["right-to-left override", "/a\u202eb"],
    ["BOM", "/\ufeffabout"],
    ["trailing slash twice", "/about//"],
    ["dot and slash", "/about/."],
    ["line separator U+2028", "/a\u2028b"],
    ["replacement char (what an overlong UTF-8 dot decodes to)", "/\ufffd\ufffd/x"],
  ];
  for (const [what, url] of lookalikes) {
    test(`url lookalike: ${what} → 400, nothing written`, async () => {
      const before = uriFiles();
      const r = await as("admin", "POST", "/api/v1/.pages", { url, text: "x" });
      expect(r.status).toBe(400);
      expect(r.body!.message).toBe("INVALID_DATA");
      expect(uriFiles()).toEqual(before);
    });
  }

  test("overlong UTF-8 bytes (C0 AE = '.') in a raw JSON body: 400, nothing written", async () => {
    const before = uriFiles();
    const head = new TextEncoder().encode('{"url":"/');
    const tail = new TextEncoder().encode('/x","text":"x"}');
    const body = new Uint8Array([...head, 0xc0, 0xae, 0xc0, 0xae, ...tail]);
    const res = await fetch(`${s.base}/api/v1/.pages`, { method: "POST", headers: { authorization: `Bearer ${s.token}`, "content-type": "application/json" }, body });
    expect(res.status).toBe(400);
    expect(uriFiles()).toEqual(before);
  });

  test("a URL of exactly 512 bytes is taken; 513 with a trailing slash (512 once normalised) too, or a clean 400", async () => {
    const seg = (n: number) => "a".repeat(n);
    const url = `/${seg(200)}/${seg(200)}/${seg(109)}`; // 1+200+1+200+1+109 = 512
    expect(Buffer.byteLength(url)).toBe(512);
    const r = await as("admin", "POST", "/api/v1/.pages", { url, text: "long" });
    expect(r.status).toBe(201);
    expect((await as("admin", "DELETE", `/api/v1/.pages/${md5(url)}`)).status).toBe(200);
    const r2 = await as("admin", "POST", "/api/v1/.pages", { url: `${url}/`, text: "long" });
    expect([201, 400]).toContain(r2.status);
    if (r2.status === 201) expect((await as("admin", "DELETE", `/api/v1/.pages/${md5(url)}`)).status).toBe(200);
    expect(existsSync(join(s.dir, "ext/uri", seg(200)))).toBe(false);
  });

  test("very deep URL (255 one-letter segments): created, listed, and deleted with all its folders", async () => {
    const url = `/${Array.from({ length: 255 }, () => "d").join("/")}`;
    expect(Buffer.byteLength(url)).toBeLessThanOrEqual(512);
    const r = await as("admin", "POST", "/api/v1/.pages", { url, text: "deep" });
    expect(r.status).toBe(201);
    // The walk of route files stops at 64 levels: a page the API made must still be reachable by its id.
    const put = await as("admin", "PUT", `/api/v1/.pages/${md5(url)}`, { text: "deeper" });
    expect(put.status).toBe(200);
    const del = await as("admin", "DELETE", `/api/v1/.pages/${md5(url)}`);
    expect(del.status).toBe(200);
    expect(existsSync(join(s.dir, "ext/uri/d"))).toBe(false);
  });

  test("a URL that is a prefix of another: deleting /pre keeps /pre/fix and its folder", async () => {
    expect((await as("admin", "POST", "/api/v1/.pages", { url: "/pre/fix", text: "child" })).status).toBe(201);
    expect((await as("admin", "POST", "/api/v1/.pages", { url: "/pre", text: "parent" })).status).toBe(201);
    expect((await as("admin", "DELETE", `/api/v1/.pages/${md5("/pre")}`)).status).toBe(200);
    expect(readFileSync(join(s.dir, "ext/uri/pre/fix/index.tpl"), "utf8")).toBe("child");
    expect((await as("admin", "DELETE", `/api/v1/.pages/${md5("/pre/fix")}`)).status).toBe(200);
    expect(existsSync(join(s.dir, "ext/uri/pre"))).toBe(false);
  });

  test("case: /About and /about are two pages on a case-sensitive disk, each its own id", async () => {
    const r = await as("admin", "POST", "/api/v1/.pages", { url: "/About", text: "upper" });
    expect(r.status).toBe(201);
    expect(readFileSync(join(s.dir, "ext/uri/about/index.tpl"), "utf8")).toBe("About us\n");
    expect((await as("admin", "DELETE", `/api/v1/.pages/${md5("/About")}`)).status).toBe(200);
  });

  test("a parent folder swapped for a symbolic link leading out while writes run: nothing ever lands outside", async () => {
    const base = join(s.dir, "ext/uri/race");
    mkdirSync(base, { recursive: true });
    const parked = join(s.dir, "ext/uri/race-parked");
    let stop = false;
    // Flip ext/uri/race between a real folder and a link to the outside folder as fast as we can.
    const flipper = (async () => {
      while (!stop) {
        try {
          renameSync(base, parked);
          symlinkSync(outside, base);
          await Bun.sleep(0);
          rmSync(base);
          renameSync(parked, base);
        } catch {
          // lost a race with ourselves: put things back
        }
        await Bun.sleep(0);
      }
    })();
    const deadline = Date.now() + 3000;
    let n = 0;
    while (Date.now() < deadline) {
      await Promise.all(Array.from({ length: 8 }, () => as("admin", "POST", "/api/v1/.pages", { url: `/race/p${n++}`, text: "raced" })));
    }
    stop = true;
    await flipper;
    try {
      rmSync(base);
    } catch {
      // a folder
    }
    if (existsSync(parked)) {
      rmSync(base, { recursive: true, force: true });
      renameSync(parked, base);
    }
    const leaked = readdirSync(outside);
    rmSync(base, { recursive: true, force: true });
    for (const f of leaked) rmSync(join(outside, f), { recursive: true, force: true });
    expect(leaked).toEqual([]);
  }, 30_000);

  // ---- bodies ---------------------------------------------------------------------------------

  const shapes: [string, string][] = [
    ["an array", "[]"],
    ["a string", '"hello"'],
    ["null", "null"],
    ["a number", "42"],
    ["url is an array", '{"url":["/x"],"text":"x"}'],
    ["url is an object", '{"url":{"toString":"/x"},"text":"x"}'],
    ["text is a number", '{"url":"/shape-n","text":5}'],
    ["text is an array", '{"url":"/shape-a","text":["x"]}'],
    ["text is null", '{"url":"/shape-null","text":null}'],
    ["__proto__ url", '{"__proto__":{"url":"/proto"},"text":"x"}'],
    ["invalid JSON", '{"url":"/x",'],
    ["empty body", ""],
  ];
  for (const [what, raw] of shapes) {
    test(`POST body of the wrong shape: ${what} → 400/422 in the envelope, nothing written`, async () => {
      const before = uriFiles();
      const r = await as("admin", "POST", "/api/v1/.pages", raw, { "content-type": "application/json" });
      expect([400, 422]).toContain(r.status);
      expect(r.body).toMatchObject({ success: false, message: "INVALID_DATA" });
      expect(uriFiles()).toEqual(before);
    });
  }

  test("PUT with a body of the wrong shape: 400/422, the file unchanged", async () => {
    for (const raw of ["[]", "null", '"x"', '{"text":{"a":1}}', '{"text":5}']) {
      const r = await as("admin", "PUT", `/api/v1/.pages/${md5("/about")}`, raw, { "content-type": "application/json" });
      expect([400, 422]).toContain(r.status);
      expect(r.body!.success).toBe(false);
    }
    expect(readFileSync(join(s.dir, "ext/uri/about/index.tpl"), "utf8")).toBe("About us\n");
  });

  test("restore's entry must be a history entry id: null, true, \"\" and [n] are not entry 0 or 1", async () => {
    const id = md5("/restore-me");
    expect((await as("admin", "POST", "/api/v1/.pages", { url: "/restore-me", text: "first" })).status).toBe(201);
    expect((await as("admin", "PUT", `/api/v1/.pages/${id}`, { text: "second" })).status).toBe(200);
    for (const entry of [null, true, "", [0], "0x1", " "]) {
      const r = await as("admin", "POST", `/api/v1/.pages/${id}/restore`, { entry });
      expect({ entry, status: r.status }).toEqual({ entry, status: 400 });
    }
    expect(readFileSync(join(s.dir, "ext/uri/restore-me/index.tpl"), "utf8")).toBe("second");
  });

  test("a record's restore reads entry the same way: null, true, \"\" and [n] are 400, the record unchanged", async () => {
    const made = await as("admin", "POST", "/api/v1/notes", { title: "v1", slug: "restore-entry" });
    expect(made.status).toBe(201);
    const uuid = Object.keys(made.body!.notes)[0];
    expect((await as("admin", "PATCH", `/api/v1/notes/${uuid}`, { title: "v2" })).status).toBe(200);
    for (const entry of [null, true, "", [0], "0x1", " ", "0", 1.5]) {
      const r = await as("admin", "POST", `/api/v1/notes/${uuid}/restore`, { entry });
      expect({ entry, status: r.status }).toEqual({ entry, status: 400 });
    }
    expect((await as("admin", "GET", `/api/v1/notes/${uuid}`)).body!.notes[uuid].title).toBe("v2");
    // A real entry id still works: entry 0 is the creation.
    expect((await as("admin", "POST", `/api/v1/notes/${uuid}/restore`, { entry: 0 })).status).toBe(200);
    expect((await as("admin", "GET", `/api/v1/notes/${uuid}`)).body!.notes[uuid].title).toBe("v1");
    expect((await as("admin", "DELETE", `/api/v1/notes/${uuid}`)).status).toBe(200);
  });

  test("the 64 KiB bound: exactly 65,536 bytes are taken even when JSON escaping doubles the body; one byte more is 422", async () => {
    const exact = '"\n'.repeat(32 * 1024); // 65,536 bytes, ~128 KiB as JSON
    expect(Buffer.byteLength(exact)).toBe(65536);
    const r = await as("admin", "POST", "/api/v1/.pages", { url: "/big-exact", text: exact });
    expect(r.status).toBe(201);
    expect(readFileSync(join(s.dir, "ext/uri/big-exact/index.tpl"), "utf8")).toBe(exact);
    const multi = `${"x".repeat(65535)}é`; // 65,537 bytes in 65,536 characters
    const over = await as("admin", "POST", "/api/v1/.pages", { url: "/big-over", text: multi });
    expect(over.status).toBe(422);
    expect(existsSync(join(s.dir, "ext/uri/big-over"))).toBe(false);
    expect((await as("admin", "DELETE", `/api/v1/.pages/${md5("/big-exact")}`)).status).toBe(200);
  });

  test("listing: huge limit, negative or huge offset, limit=0: 400 or an empty page, never a 500", async () => {
    for (const q of ["limit=99999999999999999999", "offset=-5", "limit=-1", "limit=1e3", "offset=1e400", "limit=%20", "limit=0x10"]) {
      const r = await as("admin", "GET", `/api/v1/.pages?${q}`);
      expect({ q, status: r.status }).toEqual({ q, status: 400 });
    }
    const big = await as("admin", "GET", "/api/v1/.pages?offset=999999999999");
    expect(big.status).toBe(200);
    expect(big.body!.count).toBe(0);
    const zero = await as("admin", "GET", "/api/v1/.pages?limit=0");
    expect(zero.status).toBe(200);
    expect(zero.body!.count).toBe(0);
    expect(zero.body!.total).toBeGreaterThan(0);
  });

  // ---- allow tags -----------------------------------------------------------------------------

  test("allow tags split across lines, in HTML comments, or with odd spacing are what the server reads: listed as allows and served", async () => {
    const text = "<!-- [#api-allow\npost\nmessages\n#] -->\n";
    const r = await as("admin", "POST", "/api/v1/.pages", { url: "/api/v1/messages", text });
    expect(r.status).toBe(201);
    expect(r.body!.pages[md5("/api/v1/messages")].allows).toEqual([{ operation: "post", resource: "messages" }]);
    expect((await call(s.base, "POST", "/api/v1/messages", { body: { text: "anon" } })).status).toBe(201);
    expect((await as("admin", "DELETE", `/api/v1/.pages/${md5("/api/v1/messages")}`)).status).toBe(200);
    expect((await call(s.base, "POST", "/api/v1/messages", { body: { text: "anon" } })).status).toBe(403);
  });

  test("a tag hiding another ([#api-allow- [#api-allow delete notes#]) is refused, not half-read", async () => {
    const r = await as("admin", "POST", "/api/v1/.pages", { url: "/api/v1/notes", text: "[#api-allow- [#api-allow delete notes#]" });
    expect(r.status).toBe(422);
    expect(existsSync(join(s.dir, "ext/uri/api/v1/notes"))).toBe(false);
  });

  test("manage-.pages cannot become admin through allow tags on users and roles", async () => {
    const adminRole = "admin";
    // Open every operation on users and on roles to every visitor (and so to every signed-in caller).
    const u = await as("manager", "POST", "/api/v1/.pages", { url: "/api/v1/users", text: "[#api-allow post users#][#api-allow put users#][#api-allow get users#]" });
    const r = await as("manager", "POST", "/api/v1/.pages", { url: "/api/v1/roles", text: "[#api-allow post roles#][#api-allow put roles#][#api-allow get roles#]" });
    try {
      // Anonymous: a new admin user?
      const anonAdmin = await call(s.base, "POST", "/api/v1/users", { body: { email: "evil@example.com", password: "evil-password-1", role: adminRole, api: true } });
      expect(anonAdmin.status).not.toBe(201);
      // The manager: their own role gets (all)?
      const roles = await as("manager", "GET", "/api/v1/roles?filter=name:manager");
      const mine = Object.keys((roles.body?.roles ?? {}) as Record<string, unknown>)[0];
      if (mine) {
        const grow = await as("manager", "PATCH", `/api/v1/roles/${mine}`, { permissions: ["manage-.pages", "(all)"] });
        expect(grow.status).not.toBe(200);
      }
      // The manager moves themselves to the admin role?
      const me = await as("manager", "GET", "/api/v1/users?filter=email:manager@example.com");
      const myUuid = Object.keys((me.body?.users ?? {}) as Record<string, unknown>)[0];
      if (myUuid) {
        const move = await as("manager", "PATCH", `/api/v1/users/${myUuid}`, { role: adminRole });
        expect(move.status).not.toBe(200);
      }
      // A role with (all) made from scratch, then a user in it?
      const made = await as("manager", "POST", "/api/v1/roles", { name: "root2", permissions: ["(all)"] });
      expect(made.status).not.toBe(201);
      // Whatever happened, the manager is not an admin now.
      expect((await as("manager", "GET", "/api/v1/git-status?fetch=0")).status).toBe(403);
    } finally {
      if (u.status === 201) await as("admin", "DELETE", `/api/v1/.pages/${md5("/api/v1/users")}`);
      if (r.status === 201) await as("admin", "DELETE", `/api/v1/.pages/${md5("/api/v1/roles")}`);
    }
  });

  test("allow tags on dot resources (.files, .ai, .pages, .config, .files_meta) and built-in internals are refused", async () => {
    for (const res of [".files", ".ai", ".pages", ".config", ".files_meta", ".resources"]) {
      const r = await as("admin", "POST", "/api/v1/.pages", { url: `/api/v1/${res}`, text: `[#api-allow delete ${res}#][#api-allow put ${res}#]` });
      // .files_meta is internal (never served): a tag on it does nothing, so it is refused like an unknown resource.
      if (r.status === 201) await as("admin", "DELETE", `/api/v1/.pages/${md5(`/api/v1/${res}`)}`);
      expect({ res, status: r.status }).toEqual({ res, status: 422 });
    }
  });

  test("allow tags on dot resources written by hand (or git) grant nothing: no view-.pages for visitors or signed-in callers", async () => {
    for (const res of [".pages", ".files", ".files_meta"]) {
      mkdirSync(join(s.dir, "ext/uri/api/v1", res), { recursive: true });
      writeFileSync(join(s.dir, "ext/uri/api/v1", res, "index.tpl"), `[#api-allow get ${res}#][#api-allow delete ${res}#][#api-allow put ${res}#]`);
    }
    try {
      // A write through the API makes the server read the allows anew at once.
      expect((await as("admin", "POST", "/api/v1/.pages", { url: "/reread", text: "x" })).status).toBe(201);
      expect((await call(s.base, "GET", "/api/v1/.pages?kind=route")).status).toBe(403);
      expect((await call(s.base, "GET", `/api/v1/.pages/${md5("/about")}`)).status).not.toBe(200);
      expect((await call(s.base, "GET", "/api/v1/.files")).status).toBe(403);
      expect((await as("notesonly", "GET", "/api/v1/.pages?kind=route")).body!.total).toBe(0);
      expect((await as("notesonly", "GET", `/api/v1/.pages/${md5("/about")}/history`)).status).not.toBe(200);
      expect((await as("notesonly", "POST", "/api/v1/.pages", { url: "/by-notesonly", text: "x" })).status).toBe(403);
      expect(existsSync(join(s.dir, "ext/uri/by-notesonly"))).toBe(false);
    } finally {
      rmSync(join(s.dir, "ext/uri/api/v1/.pages"), { recursive: true });
      rmSync(join(s.dir, "ext/uri/api/v1/.files"), { recursive: true });
      rmSync(join(s.dir, "ext/uri/api/v1/.files_meta"), { recursive: true });
      await as("admin", "DELETE", `/api/v1/.pages/${md5("/reread")}`);
    }
  });

  // ---- permissions ----------------------------------------------------------------------------

  test("view-.pages: history readable, but restore and writes are 403 and nothing changes", async () => {
    const id = md5("/viewer-restore");
    expect((await as("admin", "POST", "/api/v1/.pages", { url: "/viewer-restore", text: "first" })).status).toBe(201);
    expect((await as("admin", "PUT", `/api/v1/.pages/${id}`, { text: "second" })).status).toBe(200);
    const h = await as("viewer", "GET", `/api/v1/.pages/${id}/history`);
    expect(h.status).toBe(200);
    const first = h.body!.history[0].id;
    const r = await as("viewer", "POST", `/api/v1/.pages/${id}/restore`, { entry: first });
    expect(r.status).toBe(403);
    expect(r.body!.needs).toContain("manage-.pages");
    expect(readFileSync(join(s.dir, "ext/uri/viewer-restore/index.tpl"), "utf8")).toBe("second");
    for (const [m, path, body] of [["PUT", `/api/v1/.pages/${id}`, { text: "x" }], ["DELETE", `/api/v1/.pages/${id}`, undefined], ["POST", "/api/v1/.pages", { url: "/v", text: "x" }]] as const) {
      expect((await as("viewer", m, path, body)).status).toBe(403);
    }
  });

  test("view-notes only: record pages of notes, no route files, no endpoints, no history, no text", async () => {
    const r = await as("notesonly", "GET", "/api/v1/.pages");
    expect(r.status).toBe(200);
    const list = Object.values(r.body!.pages as Record<string, any>);
    expect(list.every((p) => p.kind === "record" && p.resource === "notes")).toBe(true);
    expect((await as("notesonly", "GET", "/api/v1/.pages?kind=route")).body!.total).toBe(0);
    expect((await as("notesonly", "GET", `/api/v1/.pages/${md5("/about")}`)).status).toBe(404);
    expect([403, 404]).toContain((await as("notesonly", "GET", `/api/v1/.pages/${md5("/about")}/history`)).status);
  });

  test("ids of other kinds: PUT/DELETE/restore of a record page's id are 404, the record untouched", async () => {
    const id = md5("/notes/hello");
    expect((await as("admin", "GET", `/api/v1/.pages/${id}`)).body!.pages[id].kind).toBe("record");
    expect((await as("admin", "PUT", `/api/v1/.pages/${id}`, { text: "x" })).status).toBe(404);
    expect((await as("admin", "DELETE", `/api/v1/.pages/${id}`)).status).toBe(404);
    expect((await as("admin", "POST", `/api/v1/.pages/${id}/restore`, {})).status).toBe(404);
    expect(existsSync(join(s.dir, "ext/uri/notes"))).toBe(false);
    expect((await as("admin", "GET", "/api/v1/notes?filter=slug:hello")).body!.count).toBe(1);
  });

  test("an id in upper case, with a suffix, or the md5 of the URL with a trailing slash: 404, never another page", async () => {
    for (const id of [md5("/about").toUpperCase(), `${md5("/about")}x`, md5("/about/"), `${md5("/about")}%00`]) {
      const r = await as("admin", "GET", `/api/v1/.pages/${id}`);
      expect({ id, status: r.status }).toEqual({ id, status: 404 });
    }
  });

  // ---- concurrency ----------------------------------------------------------------------------

  test("10 PUTs at once to one page: all answer, the file is one of the texts whole, history holds each once, no temp file", async () => {
    const id = md5("/busy");
    expect((await as("admin", "POST", "/api/v1/.pages", { url: "/busy", text: "start" })).status).toBe(201);
    const texts = Array.from({ length: 10 }, (_, i) => `text ${i} `.repeat(500 + i));
    const rs = await Promise.all(texts.map((text) => as("admin", "PUT", `/api/v1/.pages/${id}`, { text })));
    expect(rs.map((r) => r.status)).toEqual(Array(10).fill(200));
    const final = readFileSync(join(s.dir, "ext/uri/busy/index.tpl"), "utf8");
    expect(texts).toContain(final);
    const h = await as("admin", "GET", `/api/v1/.pages/${id}/history`);
    const hist = h.body!.history as { action: string; record: { text: string } }[];
    expect(hist.length).toBe(11);
    expect(hist[0].record.text).toBe("start");
    expect(new Set(hist.slice(1).map((e) => e.record.text))).toEqual(new Set(texts));
    expect(hist.at(-1)!.record.text).toBe(final);
    expect(uriFiles().filter((f) => f.includes(".tmp"))).toEqual([]);
  });

  test("the same URL POSTed twice at once: one 201, one 409; one history entry", async () => {
    const rs = await Promise.all([1, 2].map((n) => as("admin", "POST", "/api/v1/.pages", { url: "/twice", text: `t${n}` })));
    expect(rs.map((r) => r.status).sort()).toEqual([201, 409]);
    const h = await as("admin", "GET", `/api/v1/.pages/${md5("/twice")}/history`);
    expect(h.body!.history.length).toBe(1);
  });

  test("DELETE and PUT at once: either the file is gone with a delete entry last, or it is there with its text; never both half", async () => {
    const id = md5("/dp");
    expect((await as("admin", "POST", "/api/v1/.pages", { url: "/dp", text: "v0" })).status).toBe(201);
    const [d, p] = await Promise.all([as("admin", "DELETE", `/api/v1/.pages/${id}`), as("admin", "PUT", `/api/v1/.pages/${id}`, { text: "v1" })]);
    expect(d.status).toBe(200);
    expect([200, 404]).toContain(p.status);
    const h = (await as("admin", "GET", `/api/v1/.pages/${id}/history`)).body!.history as { action: string }[];
    const there = existsSync(join(s.dir, "ext/uri/dp/index.tpl"));
    expect(there).toBe(h.at(-1)!.action !== "delete");
  });
});

// ---------------------------------------------------------------------------------------------
// git
// ---------------------------------------------------------------------------------------------


/**
 * `/api/v1/.pages` through the real server (issue 34): the listing of route files, extension
 * endpoints and record pages (filters, search, paging, ids), one page, route files written with
 * their allow tags served at once, history and roll back, every permission (a resource named
 * `pages` included), the OpenAPI document, and every refused input with nothing written.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { adminSite, cli, siteEnv } from "./helpers/site";
import { addUser, call, tokenFor } from "./helpers/access";

const md5 = (s: string) => new Bun.CryptoHasher("md5").update(s).digest("hex");

const notes = {
  fields: { title: { type: "text", required: true }, slug: { type: "text" }, published: { type: "boolean" } },
  sitemap: { url: "/notes/[#record.slug#]", published: "published" },
};
const articles = {
  languages: ["en", "de"],
  fields: { title: { type: "text", i18n: true, required: true }, slug: { type: "text", i18n: true } },
  sitemap: { url: { en: "/en/articles/[#record.slug#]", de: "/de/artikel/[#record.slug#]" } },
};
// A resource that happens to be called `pages`: nothing to do with `.pages`.
const pages = { fields: { title: { type: "text", required: true } } };
const messages = { fields: { text: { type: "text", required: true } } };
const EXT = `export default function (api) {
  api.route("GET", "/hello", () => ({ hi: true }), { public: true });
  api.route("POST", "/hello", () => ({ posted: true }));
}
`;

let s: Awaited<ReturnType<typeof adminSite>>;
const tokens: Record<string, string> = {};
let adminUuid = "";
const as = (who: string, method: string, path: string, body?: unknown) => call(s.base, method, path, { token: who === "anonymous" ? undefined : tokens[who], body });
const listOf = (body: Record<string, any> | null) => Object.values(body!.pages as Record<string, any>);
const urls = (body: Record<string, any> | null) => listOf(body).map((p) => p.url as string);
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

beforeAll(async () => {
  s = await adminSite({
    defs: { notes, articles, pages, messages },
    files: {
      "ext/uri/about/index.tpl": "About us\n",
      "ext/uri/api/v1/notes/index.tpl": "[#api-allow post notes#]\n",
      "ext/hooks.ts": EXT,
    },
  });
  const roles: Record<string, string[]> = {
    viewer: ["view-.pages"],
    manager: ["manage-.pages"],
    notesonly: ["view-notes"],
    pagesres: ["view-pages", "edit-pages", "create-pages"],
    nothing: [],
  };
  for (const [name, permissions] of Object.entries(roles)) {
    const r = await s.apiJson("POST", "/api/v1/roles", { name, permissions });
    if (r.status !== 201) throw new Error(JSON.stringify(r.body));
    await addUser(s.dir, `${name}@example.com`, "a-password-1", { role: name, api: true });
    tokens[name] = await tokenFor(s.base, `${name}@example.com`, "a-password-1");
  }
  tokens.admin = s.token;
  adminUuid = Object.keys((await s.apiJson("GET", "/api/v1/users?filter=email:admin@example.com")).body!.users)[0];
  for (const [title, slug, published] of [["Hello World", "hello-world", true], ["Draft note", "draft", false], ["Zebra", "zebra", true]] as const) {
    expect((await s.apiJson("POST", "/api/v1/notes", { title, slug, published })).status).toBe(201);
  }
  expect((await s.apiJson("POST", "/api/v1/articles", { title: { en: "Spring", de: "Frühling" }, slug: { en: "spring", de: "fruehling" } })).status).toBe(201);
  expect((await s.apiJson("POST", "/api/v1/pages", { title: "A record of the resource called pages" })).status).toBe(201);
});
afterAll(async () => { await s.cleanup(); });

describe("listing", () => {
  test("route files, endpoints and record pages, one entry per URL in URL order, id = md5 of the URL", async () => {
    const r = await as("admin", "GET", "/api/v1/.pages");
    expect(r.status).toBe(200);
    expect(r.body!.success).toBe(true);
    const list = listOf(r.body);
    expect(urls(r.body)).toEqual(["/about", "/api/v1/notes", "/de/artikel/fruehling", "/en/articles/spring", "/hello", "/notes/draft", "/notes/hello-world", "/notes/zebra"]);
    expect(r.body!.total).toBe(8);
    expect(r.body!.count).toBe(8);
    for (const [id, p] of Object.entries(r.body!.pages as Record<string, any>)) expect(id).toBe(md5(p.url));
    const byUrl = Object.fromEntries(list.map((p) => [p.url, p]));
    expect(byUrl["/api/v1/notes"]).toMatchObject({ kind: "route", file: "ext/uri/api/v1/notes/index.tpl", allows: [{ operation: "post", resource: "notes" }], size: 25 });
    expect(typeof byUrl["/api/v1/notes"]._modified).toBe("number");
    expect(byUrl["/hello"]).toMatchObject({ kind: "endpoint", methods: ["GET", "POST"], file: "ext/hooks.ts" });
    expect(byUrl["/notes/draft"]).toMatchObject({ kind: "record", resource: "notes", title: "Draft note", language: null, published: false });
    expect(byUrl["/notes/hello-world"]).toMatchObject({ kind: "record", resource: "notes", title: "Hello World", published: true });
    expect(typeof byUrl["/notes/hello-world"].uuid).toBe("string");
    expect(byUrl["/de/artikel/fruehling"]).toMatchObject({ kind: "record", resource: "articles", title: "Frühling", language: "de" });
    expect(byUrl["/en/articles/spring"]).toMatchObject({ title: "Spring", language: "en" });
  });

  test("kind=, resource=, search= (URL or title, any case) and limit/offset with total", async () => {
    expect(urls((await as("admin", "GET", "/api/v1/.pages?kind=route")).body)).toEqual(["/about", "/api/v1/notes"]);
    expect(urls((await as("admin", "GET", "/api/v1/.pages?kind=endpoint")).body)).toEqual(["/hello"]);
    expect(urls((await as("admin", "GET", "/api/v1/.pages?kind=record&resource=articles")).body)).toEqual(["/de/artikel/fruehling", "/en/articles/spring"]);
    expect(urls((await as("admin", "GET", "/api/v1/.pages?search=HELLO")).body)).toEqual(["/hello", "/notes/hello-world"]);
    expect(urls((await as("admin", "GET", "/api/v1/.pages?search=fr%C3%BChling")).body)).toEqual(["/de/artikel/fruehling"]);
    expect(urls((await as("admin", "GET", "/api/v1/.pages?search=draft%20NOTE&kind=record")).body)).toEqual(["/notes/draft"]);
    const page = await as("admin", "GET", "/api/v1/.pages?kind=record&limit=2&offset=1");
    expect(urls(page.body)).toEqual(["/en/articles/spring", "/notes/draft"]);
    expect(page.body!.total).toBe(5);
    expect(page.body!.count).toBe(2);
    expect((await as("admin", "GET", "/api/v1/.pages?search=nothing-like-this")).body!.total).toBe(0);
    for (const bad of ["kind=file", "limit=abc", "limit=5000", "offset=-1"]) {
      const r = await as("admin", "GET", `/api/v1/.pages?${bad}`);
      expect(r.status).toBe(400);
      expect(r.body!.message).toBe("INVALID_DATA");
    }
  });

  test("record pages follow record writes at once: create, rename, unpublish, delete", async () => {
    const c = await s.apiJson("POST", "/api/v1/notes", { title: "Fresh", slug: "fresh", published: true });
    const uuid = Object.keys(c.body!.notes)[0];
    expect(urls((await as("admin", "GET", "/api/v1/.pages?search=fresh")).body)).toEqual(["/notes/fresh"]);
    await s.apiJson("PUT", `/api/v1/notes/${uuid}`, { slug: "renamed", title: "Renamed", published: false });
    const after = await as("admin", "GET", "/api/v1/.pages?resource=notes");
    expect(urls(after.body)).toContain("/notes/renamed");
    expect(urls(after.body)).not.toContain("/notes/fresh");
    expect(listOf(after.body).find((p) => p.url === "/notes/renamed")).toMatchObject({ title: "Renamed", published: false });
    await s.apiJson("DELETE", `/api/v1/notes/${uuid}`);
    expect(urls((await as("admin", "GET", "/api/v1/.pages?resource=notes")).body)).not.toContain("/notes/renamed");
  });
});

describe("one page", () => {
  test("a route file with its text; a record page; unknown ids 404", async () => {
    const r = await as("admin", "GET", `/api/v1/.pages/${md5("/api/v1/notes")}`);
    expect(r.status).toBe(200);
    expect(r.body!.pages[md5("/api/v1/notes")]).toMatchObject({ url: "/api/v1/notes", kind: "route", text: "[#api-allow post notes#]\n" });
    const rec = await as("admin", "GET", `/api/v1/.pages/${md5("/notes/zebra")}`);
    expect(rec.body!.pages[md5("/notes/zebra")]).toMatchObject({ kind: "record", title: "Zebra" });
    expect((await as("admin", "GET", `/api/v1/.pages/${md5("/nowhere")}`)).status).toBe(404);
    expect((await as("admin", "GET", "/api/v1/.pages/not-an-id")).status).toBe(404);
  });
});

describe("writing route files", () => {
  test("POST, PUT, DELETE: allow tags served at once; 409 when the URL exists; 404 when not there", async () => {
    const anonPost = () => call(s.base, "POST", "/api/v1/messages", { body: { text: "hi" } });
    expect((await anonPost()).status).toBe(403);
    const c = await as("admin", "POST", "/api/v1/.pages", { url: "/api/v1/messages", text: "<form>…</form>\n" });
    expect(c.status).toBe(201);
    expect(c.body!.message).toBe("RESOURCE_CREATED");
    const id = md5("/api/v1/messages");
    expect(c.body!.pages[id]).toMatchObject({ url: "/api/v1/messages", kind: "route", text: "<form>…</form>\n", allows: [] });
    expect(readFileSync(join(s.dir, "ext/uri/api/v1/messages/index.tpl"), "utf8")).toBe("<form>…</form>\n");
    expect((await anonPost()).status).toBe(403);
    expect((await as("admin", "POST", "/api/v1/.pages", { url: "/api/v1/messages/", text: "again" })).status).toBe(409);

    const u = await as("admin", "PUT", `/api/v1/.pages/${id}`, { text: "<form>…</form>\n[#api-allow post messages#]\n" });
    expect(u.status).toBe(200);
    expect(u.body!.message).toBe("RESOURCE_UPDATED");
    expect(u.body!.pages[id].allows).toEqual([{ operation: "post", resource: "messages" }]);
    expect((await anonPost()).status).toBe(201);
    expect(listOf((await as("admin", "GET", "/api/v1/.pages?kind=route&search=messages")).body)[0].allows).toEqual([{ operation: "post", resource: "messages" }]);

    const d = await as("admin", "DELETE", `/api/v1/.pages/${id}`);
    expect(d.status).toBe(200);
    expect(d.body!.message).toBe("RESOURCE_DELETED");
    expect(d.body!.pages[id].text).toContain("[#api-allow post messages#]");
    expect((await anonPost()).status).toBe(403);
    expect(existsSync(join(s.dir, "ext/uri/api/v1/messages"))).toBe(false);
    expect(existsSync(join(s.dir, "ext/uri/api/v1/notes/index.tpl"))).toBe(true);
    expect((await as("admin", "DELETE", `/api/v1/.pages/${id}`)).status).toBe(404);
    expect((await as("admin", "PUT", `/api/v1/.pages/${id}`, { text: "x" })).status).toBe(404);
    expect(urls((await as("admin", "GET", "/api/v1/.pages?kind=route")).body)).toEqual(["/about", "/api/v1/notes"]);
  });

  test("a deep URL: its folders are made, and removed again with the file", async () => {
    const c = await as("admin", "POST", "/api/v1/.pages", { url: "/deep/er/päge", text: "deep" });
    expect(c.status).toBe(201);
    expect(readFileSync(join(s.dir, "ext/uri/deep/er/päge/index.tpl"), "utf8")).toBe("deep");
    expect((await as("admin", "DELETE", `/api/v1/.pages/${md5("/deep/er/päge")}`)).status).toBe(200);
    expect(existsSync(join(s.dir, "ext/uri/deep"))).toBe(false);
    expect(uriFiles().filter((f) => f.endsWith(".tmp"))).toEqual([]);
  });
});

describe("history and restore", () => {
  test("who, when and each text; roll back to an entry; bring back a deleted file", async () => {
    const id = md5("/story");
    expect((await as("admin", "POST", "/api/v1/.pages", { url: "/story", text: "v1" })).status).toBe(201);
    await as("admin", "PUT", `/api/v1/.pages/${id}`, { text: "v2" });
    await as("manager", "PUT", `/api/v1/.pages/${id}`, { text: "v3" });
    const h = await as("admin", "GET", `/api/v1/.pages/${id}/history`);
    expect(h.status).toBe(200);
    expect(h.body!.history.map((e: any) => [e.action, e.record.text])).toEqual([["create", "v1"], ["update", "v2"], ["update", "v3"]]);
    expect(h.body!.history[0].user).toBe(adminUuid);
    expect(h.body!.history[2].user).not.toBe(adminUuid);
    expect(h.body!.users[adminUuid].email).toBe("admin@example.com");
    expect(h.body!.history.every((e: any) => typeof e.at === "number" && e.record.url === "/story")).toBe(true);

    const back = await as("admin", "POST", `/api/v1/.pages/${id}/restore`, { entry: h.body!.history[0].id });
    expect(back.status).toBe(200);
    expect(back.body!.pages[id].text).toBe("v1");
    expect(readFileSync(join(s.dir, "ext/uri/story/index.tpl"), "utf8")).toBe("v1");
    expect((await as("admin", "POST", `/api/v1/.pages/${id}/restore`, {})).status).toBe(409);
    expect((await as("admin", "POST", `/api/v1/.pages/${id}/restore`, { entry: 999999 })).status).toBe(404);

    expect((await as("admin", "DELETE", `/api/v1/.pages/${id}`)).status).toBe(200);
    const gone = await as("admin", "GET", `/api/v1/.pages/${id}/history`);
    expect(gone.body!.history.map((e: any) => e.action)).toEqual(["create", "update", "update", "restore", "delete"]);
    const undelete = await as("admin", "POST", `/api/v1/.pages/${id}/restore`);
    expect(undelete.status).toBe(200);
    expect(readFileSync(join(s.dir, "ext/uri/story/index.tpl"), "utf8")).toBe("v1");
  });

  test("a file made or changed by hand: shown as entry 0, and its text kept before the API replaces it", async () => {
    mkdirSync(join(s.dir, "ext/uri/by-hand"), { recursive: true });
    writeFileSync(join(s.dir, "ext/uri/by-hand/index.tpl"), "typed in a shell");
    const id = md5("/by-hand");
    const h0 = await as("admin", "GET", `/api/v1/.pages/${id}/history`);
    expect(h0.body!.history).toEqual([expect.objectContaining({ id: 0, action: "create", user: null, record: { url: "/by-hand", text: "typed in a shell" } })]);
    expect((await as("admin", "PUT", `/api/v1/.pages/${id}`, { text: "through the API" })).status).toBe(200);
    writeFileSync(join(s.dir, "ext/uri/by-hand/index.tpl"), "edited by git");
    expect((await as("admin", "PUT", `/api/v1/.pages/${id}`, { text: "API again" })).status).toBe(200);
    const h = await as("admin", "GET", `/api/v1/.pages/${id}/history`);
    expect(h.body!.history.map((e: any) => [e.action, e.user === null, e.record.text])).toEqual([
      ["create", true, "typed in a shell"], ["update", false, "through the API"], ["update", true, "edited by git"], ["update", false, "API again"],
    ]);
    expect((await as("admin", "GET", `/api/v1/.pages/${md5("/never")}/history`)).status).toBe(404);
  });
});

describe("permissions", () => {
  const writes = (id: string) => [
    ["POST", "/api/v1/.pages", { url: "/perm", text: "x" }],
    ["PUT", `/api/v1/.pages/${id}`, { text: "x" }],
    ["DELETE", `/api/v1/.pages/${id}`, undefined],
    ["POST", `/api/v1/.pages/${id}/restore`, { entry: 0 }],
  ] as const;

  test("without any: 403 naming view-.pages", async () => {
    const r = await as("nothing", "GET", "/api/v1/.pages");
    expect(r.status).toBe(403);
    expect(r.body!.needs.split(",")).toEqual(expect.arrayContaining(["view-.pages", "manage-.pages", "view-notes"]));
    expect((await as("nothing", "GET", `/api/v1/.pages/${md5("/about")}`)).status).toBe(403);
    expect((await as("nothing", "GET", `/api/v1/.pages/${md5("/about")}/history`)).status).toBe(403);
    for (const [m, path, body] of writes(md5("/about"))) expect((await as("nothing", m, path, body)).status).toBe(403);
  });

  test("anonymous: 403 (an allow tag that opens get on a resource would show its record pages, never route files)", async () => {
    expect((await as("anonymous", "GET", "/api/v1/.pages")).status).toBe(403);
    expect((await as("anonymous", "GET", `/api/v1/.pages/${md5("/about")}`)).status).toBe(403);
    expect((await as("anonymous", "GET", `/api/v1/.pages/${md5("/about")}/history`)).status).toBe(403);
    for (const [m, path, body] of writes(md5("/about"))) expect((await as("anonymous", m, path, body)).status).toBe(403);
  });

  test("view-.pages: route files, endpoints and history; no record pages; no writes", async () => {
    const r = await as("viewer", "GET", "/api/v1/.pages");
    expect(r.status).toBe(200);
    expect(new Set(listOf(r.body).map((p) => p.kind))).toEqual(new Set(["route", "endpoint"]));
    expect((await as("viewer", "GET", `/api/v1/.pages/${md5("/about")}`)).body!.pages[md5("/about")].text).toBe("About us\n");
    expect((await as("viewer", "GET", `/api/v1/.pages/${md5("/about")}/history`)).status).toBe(200);
    expect((await as("viewer", "GET", `/api/v1/.pages/${md5("/notes/zebra")}`)).status).toBe(404);
    for (const [m, path, body] of writes(md5("/about"))) {
      const w = await as("viewer", m, path, body);
      expect(w.status).toBe(403);
      expect(w.body!.needs).toBe("manage-.pages");
    }
    expect(readFileSync(join(s.dir, "ext/uri/about/index.tpl"), "utf8")).toBe("About us\n");
  });

  test("manage-.pages writes route files (and sees them)", async () => {
    const c = await as("manager", "POST", "/api/v1/.pages", { url: "/perm", text: "x" });
    expect(c.status).toBe(201);
    expect((await as("manager", "DELETE", `/api/v1/.pages/${md5("/perm")}`)).status).toBe(200);
    expect(urls((await as("manager", "GET", "/api/v1/.pages?kind=route")).body)).toContain("/about");
  });

  test("view-notes alone: only the record pages of notes", async () => {
    const r = await as("notesonly", "GET", "/api/v1/.pages");
    expect(r.status).toBe(200);
    expect(urls(r.body)).toEqual(["/notes/draft", "/notes/hello-world", "/notes/zebra"]);
    expect((await as("notesonly", "GET", "/api/v1/.pages?kind=route")).body!.total).toBe(0);
    expect((await as("notesonly", "GET", `/api/v1/.pages/${md5("/notes/zebra")}`)).status).toBe(200);
    expect((await as("notesonly", "GET", `/api/v1/.pages/${md5("/about")}`)).status).toBe(404);
    expect((await as("notesonly", "GET", `/api/v1/.pages/${md5("/about")}/history`)).status).toBe(403);
    for (const [m, path, body] of writes(md5("/about"))) expect((await as("notesonly", m, path, body)).status).toBe(403);
  });

  test("a resource called `pages`: its permissions give nothing of .pages, and manage-.pages nothing of it", async () => {
    expect((await as("pagesres", "GET", "/api/v1/pages")).status).toBe(200);
    expect((await as("pagesres", "GET", "/api/v1/.pages")).status).toBe(403);
    expect((await as("pagesres", "GET", `/api/v1/.pages/${md5("/about")}`)).status).toBe(403);
    for (const [m, path, body] of writes(md5("/about"))) expect((await as("pagesres", m, path, body)).status).toBe(403);
    for (const who of ["manager", "viewer"]) {
      expect((await as(who, "GET", "/api/v1/pages")).status).toBe(403);
      expect((await as(who, "POST", "/api/v1/pages", { title: "x" })).status).toBe(403);
    }
  });

  test("the OpenAPI document lists .pages for the callers who may use it, and only what they may use", async () => {
    const doc = async (who: string) => (await as(who, "GET", "/api/v1/openapi.json")).body!.paths as Record<string, any>;
    const admin = await doc("admin");
    expect(Object.keys(admin["/api/v1/.pages"])).toEqual(expect.arrayContaining(["get", "post"]));
    expect(Object.keys(admin["/api/v1/.pages/{id}"])).toEqual(expect.arrayContaining(["get", "put", "delete"]));
    expect(admin["/api/v1/.pages/{id}/history"].get).toBeDefined();
    expect(admin["/api/v1/.pages/{id}/restore"].post).toBeDefined();
    const viewer = await doc("viewer");
    expect(viewer["/api/v1/.pages"].post).toBeUndefined();
    expect(viewer["/api/v1/.pages/{id}"].put).toBeUndefined();
    expect(viewer["/api/v1/.pages/{id}/history"]).toBeDefined();
    expect(viewer["/api/v1/.pages/{id}/restore"]).toBeUndefined();
    const notesOnly = await doc("notesonly");
    expect(notesOnly["/api/v1/.pages"].get).toBeDefined();
    expect(notesOnly["/api/v1/.pages/{id}/history"]).toBeUndefined();
    expect((await doc("nothing"))["/api/v1/.pages"]).toBeUndefined();
    expect((await doc("pagesres"))["/api/v1/.pages"]).toBeUndefined();
    expect((await doc("pagesres"))["/api/v1/pages"]).toBeDefined();
  });
});

describe("refused input: 400/422 naming the problem, nothing written", () => {
  let outside = "";
  beforeAll(() => {
    outside = mkdtempSync(join(tmpdir(), "resd-outside-"));
    symlinkSync(outside, join(s.dir, "ext/uri/out"));
    writeFileSync(join(outside, "secret.txt"), "outside");
    mkdirSync(join(s.dir, "ext/uri/linked"), { recursive: true });
    symlinkSync(join(outside, "secret.txt"), join(s.dir, "ext/uri/linked/index.tpl"));
  });
  afterAll(() => rmSync(outside, { recursive: true, force: true }));

  const bad: [string, string, RegExp][] = [
    ["..", "/a/../b", /\.\. segments/],
    ["leading ..", "../etc", /start with \//],
    ["relative", "contact", /start with \//],
    ["absolute, with a host", "//etc/passwd", /absolute path/],
    ["a URL", "http://example.com/x", /absolute URL/],
    ["a drive", "C:/x", /absolute URL or a drive/],
    ["backslash", "/a\\b", /backslash/],
    ["backslash dots", "/..\\..\\etc", /backslash/],
    ["NUL", "/a\u0000b", /control characters/],
    ["newline", "/a\nb", /control characters/],
    ["DEL", "/a\u007fb", /control characters/],
    ["%2e%2e", "/%2e%2e/x", /percent-encoded/],
    ["%2f", "/a%2fb", /percent-encoded/],
    ["%5c", "/a%5C..%5Cb", /percent-encoded/],
    ["empty segment", "/a//b", /empty segments/],
    ["dot segment", "/./a", /\. or \.\. segments/],
    ["query", "/a?x=1", /without \? or #/],
    ["over 512 bytes", `/${"é".repeat(256)}`, /at most 512/],
    ["symlink out", "/out/x", /outside DIR\/ext\/uri through a symbolic link/],
    ["symlinked file out", "/linked", /outside DIR\/ext\/uri through a symbolic link/],
    ["not a string", 42 as unknown as string, /URL path/],
  ];
  for (const [what, url, why] of bad) {
    test(`url: ${what}`, async () => {
      const before = uriFiles();
      const r = await as("admin", "POST", "/api/v1/.pages", { url, text: "x" });
      expect(r.status).toBe(400);
      expect(r.body!.message).toBe("INVALID_DATA");
      expect(r.body!.details).toMatch(why);
      expect(uriFiles()).toEqual(before);
      expect(readdirSync(outside)).toEqual(["secret.txt"]);
      expect(readFileSync(join(outside, "secret.txt"), "utf8")).toBe("outside");
    });
  }

  test("a file linked from outside is neither listed nor read", async () => {
    expect(urls((await as("admin", "GET", "/api/v1/.pages?kind=route")).body)).not.toContain("/linked");
    expect((await as("admin", "GET", `/api/v1/.pages/${md5("/linked")}`)).status).toBe(404);
    expect((await as("admin", "GET", `/api/v1/.pages/${md5("/out/x")}`)).status).toBe(404);
  });

  const badText: [string, string, string, RegExp][] = [
    ["over 64 KiB", "/big", "x".repeat(64 * 1024 + 1), /at most 65536 bytes/],
    ["NUL", "/nul", "a\u0000b", /NUL/],
    ["unknown resource", "/api/v1/nosuch", "[#api-allow post nosuch#]", /no resource "nosuch"/],
    ["unknown operation", "/api/v1/articles", "[#api-allow export articles#]", /unknown operation "export"/],
    ["a tag for another resource", "/api/v1/articles", "[#api-allow post notes#]", /only in the route file of \/api\/v1\/notes/],
    ["a tag outside /api/v1/<resource>", "/contact", "[#api-allow post articles#]", /would do nothing/],
    ["a malformed tag", "/api/v1/articles", "[#api-allow post#]", /not an allow tag/],
  ];
  for (const [what, url, text, why] of badText) {
    test(`text: ${what} → 422`, async () => {
      const before = uriFiles();
      const r = await as("admin", "POST", "/api/v1/.pages", { url, text });
      expect(r.status).toBe(422);
      expect(r.body!.message).toBe("INVALID_DATA");
      expect(r.body!.details).toMatch(why);
      expect(r.body!.errors.text).toMatch(why);
      expect(uriFiles()).toEqual(before);
      expect((await as("admin", "GET", `/api/v1/.pages/${md5(url)}/history`)).status).toBe(404);
    });
  }

  test("a bad text on PUT leaves the file as it was; missing fields are refused", async () => {
    const id = md5("/about");
    const r = await as("admin", "PUT", `/api/v1/.pages/${id}`, { text: "[#api-allow post nosuch#]" });
    expect(r.status).toBe(422);
    expect(readFileSync(join(s.dir, "ext/uri/about/index.tpl"), "utf8")).toBe("About us\n");
    expect((await as("admin", "PUT", `/api/v1/.pages/${id}`, {})).status).toBe(422);
    expect((await as("admin", "POST", "/api/v1/.pages", { text: "x" })).status).toBe(400);
    expect((await as("admin", "POST", "/api/v1/.pages", "[1]")).status).toBe(400);
    expect((await as("admin", "GET", `/api/v1/.pages/${id}/history`)).body!.history).toHaveLength(1);
  });
});

describe("another process", () => {
  // Another process's commits are looked for at most once a second per resource (docs/editing.md):
  // a request right after the previous look (on PostgreSQL, any commit moves the store's version,
  // this process's own too), or before the commit's notice arrived, may come before it; the next
  // look sees them. (CI on PostgreSQL: the first request after the import still had the old list.)
  test("records written by another process (resd import beside the server) are seen within a second or so", async () => {
    const zebra = listOf((await as("admin", "GET", "/api/v1/.pages?search=zebra")).body)[0];
    const file = join(s.dir, "import.json");
    writeFileSync(file, JSON.stringify([{ uuid: zebra.uuid, title: "Zebra crossing", slug: "zebra", published: true }, { title: "Imported", slug: "imported", published: true }]));
    const r = await cli(s.dir, ["import", "notes", file]);
    expect(r.code).toBe(0);
    const seen = (list: { url: string; title?: string }[]) => list.some((p) => p.url === "/notes/imported") && list.find((p) => p.url === "/notes/zebra")?.title === "Zebra crossing";
    const deadline = Date.now() + 3000;
    let after = listOf((await as("admin", "GET", "/api/v1/.pages?resource=notes")).body);
    while (!seen(after) && Date.now() < deadline) {
      await Bun.sleep(100);
      after = listOf((await as("admin", "GET", "/api/v1/.pages?resource=notes")).body);
    }
    expect(after.map((p) => p.url)).toContain("/notes/imported");
    expect(after.find((p) => p.url === "/notes/zebra")!.title).toBe("Zebra crossing");
  });

  test("a delete and a rename by another process are seen within a second or so", async () => {
    const byUrl = Object.fromEntries(listOf((await as("admin", "GET", "/api/v1/.pages?resource=notes")).body).map((p) => [p.url, p.uuid]));
    const p = Bun.spawnSync([process.execPath, join(import.meta.dir, "fixtures/pages-foreign-write.ts"), s.dir, "notes", byUrl["/notes/imported"], byUrl["/notes/draft"], "draft-2"], { env: { ...process.env, ...siteEnv(s.dir) }, stderr: "pipe" });
    expect(p.stderr.toString()).toBe("");
    expect(p.exitCode).toBe(0);
    const want = ["/notes/draft-2", "/notes/hello-world", "/notes/zebra"];
    const deadline = Date.now() + 3000;
    let got = urls((await as("admin", "GET", "/api/v1/.pages?resource=notes")).body);
    while (JSON.stringify(got) !== JSON.stringify(want) && Date.now() < deadline) {
      await Bun.sleep(100);
      got = urls((await as("admin", "GET", "/api/v1/.pages?resource=notes")).body);
    }
    expect(got).toEqual(want);
  });
});

describe("definitions", () => {
  test("a changed sitemap.url template is listed anew; a resource without sitemap has no record pages", async () => {
    const changed = { ...articles, sitemap: { url: { en: "/en/stories/[#record.slug#]", de: "/de/geschichten/[#record.slug#]" } } };
    writeFileSync(join(s.dir, "resources/articles.json"), JSON.stringify(changed));
    const deadline = Date.now() + 10_000;
    let got: string[] = [];
    while (Date.now() < deadline) {
      got = urls((await as("admin", "GET", "/api/v1/.pages?resource=articles")).body);
      if (got.includes("/en/stories/spring")) break;
      await Bun.sleep(100);
    }
    expect(got).toEqual(["/de/geschichten/fruehling", "/en/stories/spring"]);
    expect((await as("admin", "GET", "/api/v1/.pages?resource=pages")).body!.total).toBe(0);
  });
});

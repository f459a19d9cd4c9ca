/** The admin pages' internal endpoints through the real server: permissions and shapes. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { adminSite } from "./helpers/site";
import { addUser, call, tokenFor } from "./helpers/access";

const notes = {
  fields: {
    title: { type: "text", required: true },
    status: { type: "select", options: { a: "A", b: "B" }, admin_filter: { default: "a", feature: "see-status" } },
    owner: { type: "select", resource: "people", admin_filter: true },
    secret: { type: "text" },
    tags: { type: "text", multi: true },
    title_i18n: { type: "text", i18n: true },
    done: { type: "boolean", default: true },
  },
  languages: ["en", "de"],
  hidden: "secret",
  actions: { view_url: "/site/[#record.title#]" },
};
const people = { appbar: false, fields: { name: { type: "text" } } };

let s: Awaited<ReturnType<typeof adminSite>>;
let viewer: string;
beforeAll(async () => {
  s = await adminSite({ defs: { notes, people } });
  await s.apiJson("POST", "/api/v1/people", { name: "Ada" });
  await s.apiJson("POST", "/api/v1/roles", { name: "reader", permissions: ["view-notes", "create-users"] });
  await addUser(s.dir, "reader@example.com", "reader-password", { role: "reader", api: true });
  viewer = await tokenFor(s.base, "reader@example.com", "reader-password");
});
afterAll(async () => { await s.cleanup(); });

describe("GET /api/v1/.resources", () => {
  test("an admin sees every resource with labels, columns, filters, actions and rights", async () => {
    const r = await s.apiJson("GET", "/api/v1/.resources");
    expect(r.status).toBe(200);
    expect(r.headers.get("cache-control")).toBe("no-store");
    const res = r.body!.resources;
    expect(Object.keys(res).sort()).toEqual(["notes", "people", "roles", "users"]);
    const n = res.notes;
    expect(n.label).toEqual({ singular: "Note", plural: "Notes" });
    expect(n.appbar).toBe(true);
    expect(res.users.appbar).toBe(false);
    expect(res.people.appbar).toBe(false);
    expect(n.columns).toEqual(["title", "status", "owner", "tags", "title_i18n", "done"]);
    expect(n.fields.secret).toBeUndefined();
    expect(n.filters.map((f: { field: string }) => f.field)).toEqual(["status", "owner"]);
    expect(n.filters[0]).toMatchObject({ default: "a", options: [{ value: "a", label: "A" }, { value: "b", label: "B" }] });
    expect(n.filters[1].options).toEqual([{ value: "Ada", label: "Ada" }]);
    expect(n.actions).toEqual({ view_url: "/site/[#record.title#]", url: null });
    expect(n.can).toMatchObject({ view: true, create: true, edit: true, delete: true, restore: true });
    expect(res.users.fields.api.write_only).toBe(true);
    expect(r.body!.user).toMatchObject({ email: "admin@example.com", admin: true });
  });

  test("a narrow role sees only what it may view; filters behind a feature and option labels it may not read are left out", async () => {
    const r = await call(s.base, "GET", "/api/v1/.resources", { token: viewer });
    expect(r.status).toBe(200);
    const res = (r.body as any).resources;
    expect(Object.keys(res)).toEqual(["notes"]);
    expect(res.notes.filters.map((f: { field: string }) => f.field)).toEqual(["owner"]);
    expect(res.notes.filters[0].options).toEqual([]); // people is not viewable
    expect(res.notes.can).toMatchObject({ create: false, edit: false, delete: false, import: false, export: false, restore: false });
  });

  test("anonymous callers get 401", async () => {
    expect((await call(s.base, "GET", "/api/v1/.resources")).status).toBe(401);
  });
});

describe("GET /api/v1/empty-resource", () => {
  test("a new record's starting values by type; defaults from the definition", async () => {
    const r = await s.apiJson("GET", "/api/v1/empty-resource?resource=notes");
    expect(r.status).toBe(200);
    expect(r.body!.record).toEqual({ title: "", status: "", owner: "", secret: "", tags: [], title_i18n: { en: "", de: "" }, done: true });
  });

  test("needs create permission, a named resource that exists", async () => {
    expect((await call(s.base, "GET", "/api/v1/empty-resource?resource=notes", { token: viewer })).status).toBe(403);
    expect((await s.apiJson("GET", "/api/v1/empty-resource")).status).toBe(400);
    expect((await s.apiJson("GET", "/api/v1/empty-resource?resource=nope")).status).toBe(404);
    const users = await call(s.base, "GET", "/api/v1/empty-resource?resource=users", { token: viewer });
    expect(users.status).toBe(200);
    expect(Object.keys((users.body as any).record)).not.toContain("password");
  });
});

describe("GET /api/v1/.system-messages", () => {
  test("tells an admin about a definition the running server rejected; others get an empty list", async () => {
    writeFileSync(join(s.dir, "resources", "broken.json"), "{ not json");
    let messages: { topic: string; text: string }[] = [];
    for (let i = 0; i < 50 && !messages.some((m) => m.topic === "definitions"); i++) {
      await Bun.sleep(100);
      messages = (await s.apiJson("GET", "/api/v1/.system-messages")).body!.messages;
    }
    expect(messages.find((m) => m.topic === "definitions")?.text).toContain("broken.json");
    const other = await call(s.base, "GET", "/api/v1/.system-messages", { token: viewer });
    expect((other.body as any).messages).toEqual([]);
  });
});

describe("GET /api/v1/.deleted/{resource}", () => {
  test("lists records deleted and not restored, newest first, with view permission", async () => {
    const a = Object.keys((await s.apiJson("POST", "/api/v1/notes", { title: "gone" })).body!.notes)[0];
    const b = Object.keys((await s.apiJson("POST", "/api/v1/notes", { title: "back" })).body!.notes)[0];
    await s.apiJson("DELETE", `/api/v1/notes/${a}`);
    await s.apiJson("DELETE", `/api/v1/notes/${b}`);
    await s.apiJson("POST", `/api/v1/notes/${b}/restore`, {});
    const r = await s.apiJson("GET", "/api/v1/.deleted/notes");
    expect(r.body!.deleted.map((d: { uuid: string }) => d.uuid)).toEqual([a]);
    expect(r.body!.deleted[0].record.title).toBe("gone");
    expect(r.body!.deleted[0].record.secret).toBeUndefined();
    expect((await call(s.base, "GET", "/api/v1/.deleted/people", { token: viewer })).status).toBe(403);
  });
});

describe("OpenAPI", () => {
  test("the internal endpoints are documented for signed-in callers, not for anonymous ones", async () => {
    const doc = (await s.apiJson("GET", "/api/v1/openapi.json")).body as any;
    for (const path of ["/api/v1/.resources", "/api/v1/empty-resource", "/api/v1/.system-messages", "/api/v1/.deleted/{resource}", "/api/v1/.files-usage", "/api/v1/.files-unused", "/api/v1/openai/translate", "/api/v1/openai/complete"]) expect(Object.keys(doc.paths)).toContain(path);
    const anon = await call(s.base, "GET", "/api/v1/openapi.json");
    if (anon.status === 200) expect(Object.keys((anon.body as any).paths)).not.toContain("/api/v1/.resources");
  });
});

describe("GET /admin", () => {
  test("every /admin path answers the app; assets have hashed names, are cached for a year and gzipped", async () => {
    for (const path of ["/admin", "/admin/notes", "/admin/notes/abc?view=1"]) {
      const r = await fetch(s.base + path);
      expect(r.status).toBe(200);
      expect(r.headers.get("content-type")).toContain("text/html");
      expect(r.headers.get("cache-control")).toBe("no-cache");
    }
    const html = await (await fetch(`${s.base}/admin`)).text();
    const js = /src="(\/admin\/assets\/main-[a-z0-9]+\.js)"/.exec(html)![1];
    const r = await fetch(s.base + js, { headers: { "accept-encoding": "gzip" } });
    expect(r.status).toBe(200);
    expect(r.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(r.headers.get("content-encoding")).toBe("gzip");
    expect((await fetch(`${s.base}/admin/assets/nope.js`)).status).toBe(404);
  });
});

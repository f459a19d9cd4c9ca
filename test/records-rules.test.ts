import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { adminSite } from "./helpers/site";
import { notes, pages, things } from "./fixtures/defs";

let s: Awaited<ReturnType<typeof adminSite>>;
beforeAll(async () => { s = await adminSite({ defs: { notes, pages, things } }); });
afterAll(async () => { await s.cleanup(); });

const create = (res: string, body: unknown) => s.apiJson("POST", `/api/v1/${res}`, body);
const first = (b: Record<string, any> | null, res = "notes") => Object.values(b![res])[0] as Record<string, any>;

describe("validation gives 422 INVALID_DATA naming each bad field", () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ["missing required", { year: 2000 }, "title"],
    ["empty required", { title: "" }, "title"],
    ["number type", { title: "t", year: "many" }, "year"],
    ["number min", { title: "t", year: 1800 }, "year"],
    ["number max", { title: "t", year: 3000 }, "year"],
    ["select option", { title: "t", status: "lost" }, "status"],
    ["multi select option", { title: "t", tags: ["a", "z"] }, "tags"],
    ["boolean", { title: "t", published: "perhaps" }, "published"],
    ["email", { title: "t", email: "not-an-email" }, "email"],
    ["url scheme", { title: "t", link: "javascript:alert(1)" }, "link"],
    ["url", { title: "t", link: "not a url" }, "link"],
    ["date", { title: "t", day: "2026-02-30" }, "day"],
    ["date format", { title: "t", day: "yesterday" }, "day"],
    ["color", { title: "t", colour: "red" }, "colour"],
    ["latitude", { title: "t", lat: 91, lng: 0 }, "lat"],
    ["longitude", { title: "t", lat: 10, lng: 181 }, "lng"],
    ["select from resource", { title: "t", owner: "no-such-user" }, "owner"],
    ["unknown field", { title: "t", colour2: "#fff" }, "colour2"],
    ["a prototype name is no field", { title: "t", toString: "x" }, "toString"],
    ["constructor is no field", { title: "t", constructor: "x" }, "constructor"],
    ["single-line text", { title: "a\nb" }, "title"],
  ];
  for (const [name, body, field] of cases) {
    test(name, async () => {
      const r = await create("notes", body);
      expect(r.status).toBe(422);
      expect(r.body).toMatchObject({ code: 422, success: false, status: "error", message: "INVALID_DATA" });
      expect(r.body!.errors[field]).toBeString();
    });
  }

  test("__proto__ in a body is refused as an unknown field", async () => {
    const r = await create("notes", '{"title":"t","__proto__":{"polluted":1}}');
    expect(r.status).toBe(422);
    expect(r.body!.errors.__proto__).toBe("not a field of notes");
  });

  test("i18n values per language, and the natural-short-text rule", async () => {
    expect((await create("pages", { title: { en: "Hello", de: "Hallo" } })).status).toBe(201);
    const lang = await create("pages", { title: { fr: "Bonjour" } });
    expect(lang.status).toBe(422);
    expect(lang.body!.errors.title).toContain("fr");
    expect((await create("pages", { title: "plain string" })).status).toBe(422);
    const rule = await create("pages", { title: { en: "<b>bold</b>" } });
    expect(rule.status).toBe(422);
    expect((await create("pages", { title: { en: "!!!" } })).status).toBe(422);
  });

  test("valid values of every type are stored normalised", async () => {
    const r = await create("notes", {
      title: "ok", year: "2001", published: "true", email: "a@b.io", link: "https://x.io/a", day: "2026-11-23",
      colour: "#AABBCC", lat: 52.5, lng: 13.4, tags: "a", status: "done",
    });
    expect(r.status).toBe(201);
    expect(first(r.body)).toMatchObject({ year: 2001, published: true, tags: ["a"], lat: 52.5, lng: 13.4 });
  });

  test("unique fields refuse a second record with the same value", async () => {
    expect((await create("notes", { title: "u1", slug: "same-slug" })).status).toBe(201);
    const dup = await create("notes", { title: "u2", slug: "same-slug" });
    expect(dup.status).toBe(422);
    expect(dup.body!.errors.slug).toContain("already used");
  });
});

describe("cleaning and escaping", () => {
  test("html is cleaned to the markup its buttons allow; scripts, handlers and javascript: never survive", async () => {
    const dirty = `<p onclick="x()">Hi <b>bold</b> <i>it</i> <u>u</u> <a href="javascript:alert(1)">js</a> <a href="https://ok.io" onmouseover="y()">ok</a></p><script>alert(1)</script><h2>head</h2><img src="https://x.io/a.png" onerror="z()">`;
    const r = await create("notes", { title: "html", body: dirty, rich: dirty, plain: dirty });
    const rec = first(r.body);
    for (const v of [rec.body, rec.rich, rec.plain]) {
      expect(v).not.toContain("<script");
      expect(v).not.toContain("onclick");
      expect(v).not.toContain("onmouseover");
      expect(v).not.toContain("onerror");
      expect(v).not.toContain("javascript:");
    }
    expect(rec.body).toContain("<b>bold</b>");
    expect(rec.body).toContain('<a href="https://ok.io">ok</a>');
    expect(rec.body).not.toContain("<u>");
    expect(rec.body).not.toContain("<h2>");
    expect(rec.rich).toContain("<h2>head</h2>");
    expect(rec.rich).toContain('<img src="https://x.io/a.png">');
    expect(rec.plain).toContain("<i>it</i>");
    expect(rec.plain).not.toContain("<a");
  });

  test("shortcode delimiters are stored as entities, except with keep_shortcodes", async () => {
    const r = await create("notes", { title: "a [#shortcode#] b", body: "<p>[#x#]</p>" });
    const rec = first(r.body);
    expect(rec.title).toBe("a &#91;#shortcode#&#93; b");
    expect(rec.body).toBe("<p>&#91;#x#&#93;</p>");
    const got = await s.apiJson("GET", `/api/v1/notes/${rec.uuid}`);
    expect(got.body!.notes[rec.uuid].title).toBe("a &#91;#shortcode#&#93; b");
    const kept = await create("things", { name: "[#keep#]" });
    expect(first(kept.body, "things").name).toBe("[#keep#]");
    const upd = await s.apiJson("PUT", `/api/v1/notes/${rec.uuid}`, { title: "again [#y#]" });
    expect(upd.body!.notes[rec.uuid].title).toBe("again &#91;#y#&#93;");
  });

  test("slugs are stored as given, never invented", async () => {
    const r = await create("notes", { title: "No slug here" });
    expect(first(r.body).slug).toBeUndefined();
    const g = await create("notes", { title: "With", slug: "given-slug" });
    expect(first(g.body).slug).toBe("given-slug");
  });

  test("hidden, encrypted and password fields are stored but never returned", async () => {
    const r = await create("notes", { title: "hidden", secret: "s3cret-long-1", pin: "1234", password: "pw-value-long-1" });
    expect(r.status).toBe(201);
    const rec = first(r.body);
    for (const k of ["secret", "pin", "password"]) expect(rec[k]).toBeUndefined();
    const one = await s.apiJson("GET", `/api/v1/notes/${rec.uuid}`);
    const text = JSON.stringify(one.body);
    expect(text).not.toContain("s3cret-long-1");
    expect(text).not.toContain("1234\"");
    const all = await s.api("GET", "/api/v1/notes");
    expect(await all.text()).not.toContain("s3cret-long-1");
    const upd = await s.apiJson("PUT", `/api/v1/notes/${rec.uuid}`, { secret: "other" });
    expect(upd.body!.notes[rec.uuid].secret).toBeUndefined();
    const users = await s.apiJson("GET", "/api/v1/users");
    const u = Object.values(users.body!.users)[0] as Record<string, unknown>;
    for (const k of ["password", "api", "salt"]) expect(u[k]).toBeUndefined();
  });
});

describe("history and restore", () => {
  test("every create, update and delete is kept with its user; a deleted record can be restored", async () => {
    await create("notes", { uuid: "hist", title: "v1", secret: "keep-me" });
    await s.apiJson("PUT", "/api/v1/notes/hist", { title: "v2" });
    await s.apiJson("DELETE", "/api/v1/notes/hist");
    const h = await s.apiJson("GET", "/api/v1/notes/hist/history");
    expect(h.status).toBe(200);
    expect(h.body!.history.map((e: { action: string }) => e.action)).toEqual(["create", "update", "delete"]);
    expect(h.body!.history[1].record.title).toBe("v2");
    expect(h.body!.history[0].record.secret).toBeUndefined();
    expect(h.body!.history.every((e: { user: string }) => typeof e.user === "string")).toBe(true);
    const r = await s.apiJson("POST", "/api/v1/notes/hist/restore");
    expect(r.status).toBe(200);
    expect(r.body!.notes.hist.title).toBe("v2");
    const again = await s.apiJson("POST", "/api/v1/notes/hist/restore");
    expect(again.status).toBe(409);
    await s.apiJson("PUT", "/api/v1/notes/hist", { year: 2001 });
    const back = await s.apiJson("POST", "/api/v1/notes/hist/restore", { entry: h.body!.history[0].id });
    expect(back.body!.notes.hist.title).toBe("v1");
    expect(back.body!.notes.hist.year).toBeUndefined(); // the whole record as it was, not a merge
    expect((await s.apiJson("GET", "/api/v1/notes/never/history")).status).toBe(404);
    expect((await s.apiJson("POST", "/api/v1/notes/never/restore")).status).toBe(404);
  });

  test("resources with history off keep none", async () => {
    await create("users", { email: "h@x.io", password: "pw-long-enough" });
    const list = await s.apiJson("GET", "/api/v1/users?filter=email:h@x.io");
    const uuid = Object.keys(list.body!.users)[0];
    const h = await s.apiJson("GET", `/api/v1/users/${uuid}/history`);
    expect(h.body!.history).toEqual([]);
  });
});

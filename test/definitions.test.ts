import { describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { cli, makeSite, serve } from "./helpers/site";
import { buildDefinition, DefinitionError } from "../src/core/definitions/load";

describe("definition checks (unit)", () => {
  const bad: [string, object, string][] = [
    ["unknown type", { fields: { a: { type: "texty" } } }, 'field "a": unknown type'],
    ["select without options", { fields: { s: { type: "select" } } }, 'field "s": a select needs'],
    ["slug without source", { fields: { s: { type: "slug" } } }, 'field "s": a slug needs `source`'],
    ["location without longitude", { fields: { l: { type: "location-picker" } } }, 'field "l": a location-picker needs'],
    ["media without sizes", { fields: { h: { type: "html", media: true } } }, 'field "h": `media: true` needs `media_sizes`'],
    ["fields missing", { sort: {} }, "`fields` must be an object"],
    ["hidden names a non-field", { fields: { a: { type: "text" } }, hidden: "b" }, 'field "b": named in `hidden`'],
    ["unknown rule", { fields: { a: { type: "text" } }, validate: { a: "shouty" } }, "unknown validation rule"],
    ["i18n without languages", { fields: { a: { type: "text", i18n: true } } }, "needs the root key `languages`"],
  ];
  for (const [name, raw, msg] of bad) {
    test(name, () => {
      expect(() => buildDefinition("x", raw as never, "resources/x.json")).toThrow(DefinitionError);
      expect(() => buildDefinition("x", raw as never, "resources/x.json")).toThrow(msg);
    });
  }

  test("every root key and field type of the spec is accepted; unknown keys are kept", () => {
    const raw = {
      fields: {
        title: { type: "text", required: true, admin_col: true }, t2: { type: "textarea" }, h: { type: "html", buttons: "bold", paste_html: true },
        slug: { type: "slug", source: "title", preserve_existing: true }, b: { type: "boolean", admin_filter: true }, d: { type: "date" },
        e: { type: "email" }, u: { type: "url" }, p: { type: "password" }, i: { type: "image", accept: "image/*" }, f: { type: "file" },
        up: { type: "upload" }, g: { type: "gallery" }, s: { type: "select", options: { a: "A" }, admin_filter: { default: "a", feature: "x" } },
        n: { type: "number", min: 0, max: 5 }, c: { type: "color", wrapper_class: "hidden" }, lat: { type: "location-picker", longitude_field: "lng" },
        lng: { type: "number" }, grp: { type: "group", fields: { x: { type: "text" } } }, x_custom: { type: "text", my_option: 1 },
      },
      sort: { field: "n", flags: "numeric", order: "desc" }, validate: { title: "natural-short-text" }, languages: ["en"],
      ai_prompts: { title: "short" }, name: { singular: "X", plural: "Xs" }, appbar: true, actions: { view_url: "/x/[#record.slug#]" },
      events: { create: ["created", "job:mail"] }, splitdir: true, index: ["slug"], unique: ["slug"], upsert: false,
      hidden: "p", encrypt: "t2", keep_shortcodes: false, history: true, sitemap: { url: "/x/[#record.slug#]" },
      admin_columns: ["title", "_modified"], my_root_key: { kept: true },
    };
    const def = buildDefinition("x", raw as never, null);
    expect(def.raw.my_root_key).toEqual({ kept: true });
    expect(def.fields.x_custom.my_option).toBe(1);
    expect([...def.hidden].sort()).toEqual(["p", "t2"]);
  });
});

describe("definitions at start", () => {
  test("resd serve refuses an invalid definition, names file and field, and never half-starts", async () => {
    const dir = makeSite({ defs: { good: { fields: { a: { type: "text" } } }, broken: { fields: { pic: { type: "picture" } } } } });
    await expect(serve(dir)).rejects.toThrow(/broken\.json: field "pic": unknown type "picture"/);
    rmSync(dir, { recursive: true, force: true });
  });

  test("invalid JSON is named", async () => {
    const dir = makeSite({ files: { "resources/bad.json": "{ nope" } });
    const r = await cli(dir, ["migrate"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("bad.json");
    rmSync(dir, { recursive: true, force: true });
  });

  test("a fresh site creates data/resd.db and works with zero definitions; users and roles exist", async () => {
    const dir = makeSite({ store: "sqlite" }); // the SQLite site itself is what is checked
    const s = await serve(dir);
    const r = await fetch(`${s.base}/api/v1/users`);
    expect(r.status).toBe(403); // exists, closed to anonymous callers
    expect((await fetch(`${s.base}/api/v1/roles`)).status).toBe(403);
    expect((await fetch(`${s.base}/api/v1/unknown`)).status).toBe(404);
    expect(await Bun.file(join(dir, "data/resd.db")).exists()).toBe(true);
    await s.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test("users may be extended by a file; indexes follow the definitions, also through resd migrate", async () => {
    const dir = makeSite({ store: "sqlite", defs: {
      users: { fields: { phone: { type: "text" } } },
      items: { fields: { a: { type: "text" }, b: { type: "number" } }, index: ["a", "a,b"], unique: ["b"] },
    } });
    const m1 = await cli(dir, ["migrate", "--json"]);
    expect(m1.code).toBe(0);
    expect(JSON.parse(m1.stdout).changes.some((c: { resource: string; action: string }) => c.resource === "items" && c.action === "created")).toBe(true);
    const indexes = () => {
      const db = new Database(join(dir, "data/resd.db"), { readonly: true });
      const names = (db.query("SELECT name FROM sqlite_master WHERE type='index' AND tbl_name='r:items'").all() as { name: string }[]).map((r) => r.name).filter((n) => n.startsWith("ix:")).sort();
      const versions = db.query("SELECT resource, version FROM _resd_schema WHERE resource='items'").get();
      db.close();
      return { names, versions };
    };
    expect(indexes().names).toEqual(["ix:items:_created", "ix:items:_id", "ix:items:_modified", "ix:items:a", "ix:items:a,b", "ix:items:unique:b"]);
    expect(indexes().versions).toEqual({ resource: "items", version: 1 });
    await Bun.write(join(dir, "resources/items.json"), JSON.stringify({ fields: { a: { type: "text" }, b: { type: "number" } }, index: ["b"] }));
    const m2 = await cli(dir, ["migrate", "--json"]);
    expect(m2.code).toBe(0);
    const reported = JSON.parse(m2.stdout).changes.map((c: { action: string; detail: string }) => `${c.action} ${c.detail}`).sort();
    expect(reported).toEqual(["index-added ix:items:b", "index-dropped ix:items:a", "index-dropped ix:items:a,b", "index-dropped ix:items:unique:b", "updated schema version 2"]);
    const m3 = await cli(dir, ["migrate"]);
    expect(m3.stdout.trim()).toBe("schema up to date");
    expect(indexes().names).toEqual(["ix:items:_created", "ix:items:_id", "ix:items:_modified", "ix:items:b"]);
    expect(indexes().versions).toEqual({ resource: "items", version: 2 });
    const add = await cli(dir, ["user", "add", "p@x.io", "--password", "pw-long-enough", "--json"]);
    expect(add.code).toBe(0);
    rmSync(dir, { recursive: true, force: true });
  });
});

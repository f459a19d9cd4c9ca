/** Unit tests of the pure access pieces: the matcher and `needs`, allow tags, lock lengths, form keys. */
import { describe, expect, test } from "bun:test";
import { authorize, can, grantingPatterns, hasPermission, SYSTEM, ANONYMOUS, type Action, type Principal } from "../src/core/access/permissions";
import { permissionsFromTemplate } from "../src/core/access/anonymous";
import { lockFor, MAX_LOCK_MS } from "../src/core/access/rate-limit";
import { formKeyValid, issueFormKey, stripFormFields } from "../src/core/access/forms";
import { AppError } from "../src/core/errors";
import type { Site } from "../src/core/site";

const who = (...perms: string[]): Principal => ({ kind: "user", uuid: "u1", email: "u@x", role: "r", permissions: new Set(perms) });

describe("grantingPatterns (the 403's needs)", () => {
  test("spec order for a single-record request", () => {
    expect(grantingPatterns("items", "view", "abc")).toEqual([
      "api_get_items_abc", "api_get_items", "api_(any)_items", "api_get_(any)", "api_(any)", "view-items", "manage-items",
    ]);
  });
  test("no uuid pattern for collection requests; verbs per action", () => {
    const verbs: [Action, string, string][] = [["view", "get", "view"], ["create", "post", "create"], ["edit", "put", "edit"], ["delete", "delete", "delete"], ["import", "import", "import"], ["export", "export", "export"]];
    for (const [action, verb, canonical] of verbs) {
      expect(grantingPatterns("r", action)).toEqual([`api_${verb}_r`, "api_(any)_r", `api_${verb}_(any)`, "api_(any)", `${canonical}-r`, "manage-r"]);
    }
  });
  test("delete all names only api_delete_resource_{resource}", () => {
    expect(grantingPatterns("items", "delete_all")).toEqual(["api_delete_resource_items"]);
  });
});

describe("can / authorize", () => {
  test("each granting pattern grants; (all) grants everything", () => {
    for (const p of grantingPatterns("items", "edit", "x1")) expect(can(who(p), "items", "edit", "x1")).toBe(true);
    expect(can(who("(all)"), "items", "delete_all")).toBe(true);
    expect(can(SYSTEM, "anything", "import")).toBe(true);
  });
  test("a uuid-specific legacy permission grants that record only", () => {
    expect(can(who("api_get_items_x1"), "items", "view", "x1")).toBe(true);
    expect(can(who("api_get_items_x1"), "items", "view", "x2")).toBe(false);
    expect(can(who("api_get_items_x1"), "items", "view")).toBe(false);
  });
  test("ambiguous legacy names are read against the site's resources", () => {
    // Resources foo and foo_bar both exist: api_get_foo_bar names the resource foo_bar, not record bar of foo.
    const known = new Set(["foo", "foo_bar", "resource", "notes"]);
    const site = (...perms: string[]): Principal => ({ ...who(...perms), resources: known });
    expect(can(site("api_get_foo_bar"), "foo_bar", "view")).toBe(true);
    expect(can(site("api_get_foo_bar"), "foo", "view", "bar")).toBe(false);
    expect(grantingPatterns("foo", "view", "bar", known)).not.toContain("api_get_foo_bar");
    // Without a resource foo_bar it is record bar of foo, as before.
    const onlyFoo = new Set(["foo"]);
    expect(can({ ...who("api_get_foo_bar"), resources: onlyFoo }, "foo", "view", "bar")).toBe(true);
    expect(can({ ...who("api_get_foo_bar"), resources: onlyFoo }, "foo", "view", "baz")).toBe(false);
    // api_delete_resource_notes is "delete all notes": never record `notes` of a resource called `resource`.
    expect(can(site("api_delete_resource_notes"), "notes", "delete_all")).toBe(true);
    expect(can(site("api_delete_resource_notes"), "resource", "delete", "notes")).toBe(false);
    expect(can(site("api_delete_resource_x9"), "resource", "delete", "x9")).toBe(true);
    // ...nor "delete records of a resource resource_notes".
    const withPrefixed = new Set([...known, "resource_notes"]);
    expect(can({ ...who("api_delete_resource_notes"), resources: withPrefixed }, "resource_notes", "delete", "r1")).toBe(false);
    expect(can({ ...who("api_get_resource_notes"), resources: withPrefixed }, "resource_notes", "view")).toBe(true);
  });
  test("manage- covers every operation but delete-all; no wildcard grants delete-all", () => {
    const m = who("manage-items");
    for (const a of ["view", "create", "edit", "delete", "import", "export"] as Action[]) expect(can(m, "items", a)).toBe(true);
    for (const p of ["manage-items", "delete-items", "api_delete_items", "api_(any)", "api_(any)_items", "api_delete_(any)"]) {
      expect(can(who(p), "items", "delete_all")).toBe(false);
    }
    expect(can(who("api_delete_resource_items"), "items", "delete_all")).toBe(true);
    expect(can(who("api_delete_resource_items"), "items", "delete")).toBe(false);
  });
  test("permissions are per resource and exact", () => {
    expect(can(who("view-items"), "items2", "view")).toBe(false);
    expect(can(who("view-items"), "items", "create")).toBe(false);
    expect(can(ANONYMOUS, "items", "view")).toBe(false);
  });
  test("authorize throws 403 ACCESS_DENIED with needs", () => {
    try {
      authorize(who(), "items", "delete", "x9");
      throw new Error("not thrown");
    } catch (e) {
      expect(e).toBeInstanceOf(AppError);
      expect((e as AppError).status).toBe(403);
      expect((e as AppError).code).toBe("ACCESS_DENIED");
      expect((e as AppError).extra.needs?.[0]).toBe("api_delete_items_x9");
    }
  });
  test("file endpoints use the same matcher with resource .files", () => {
    expect(grantingPatterns(".files", "create")).toEqual(["api_post_.files", "api_(any)_.files", "api_post_(any)", "api_(any)", "create-.files", "manage-.files"]);
    expect(can(who("manage-.files"), ".files", "delete", "f1")).toBe(true);
    expect(can(who("view-.files"), ".files", "edit")).toBe(false);
  });
  test("hasPermission: named permission or (all)", () => {
    expect(hasPermission(who("manage-users"), "edit-users", "manage-users")).toBe(true);
    expect(hasPermission(who("x"), "manage-users")).toBe(false);
    expect(hasPermission(who("(all)"), "anything")).toBe(true);
  });
});

describe("allow tags", () => {
  test("operations map to canonical permissions; several tags per file; spacing and case tolerated", () => {
    expect(permissionsFromTemplate("news", "[#api-allow get news#]\n[# api-allow  POST news #] [#api-allow put news#][#api-allow delete news#]").granted)
      .toEqual(["view-news", "create-news", "edit-news", "delete-news"]);
  });
  test("another resource than the folder, or an unknown operation, is ignored", () => {
    const r = permissionsFromTemplate("news", "[#api-allow get users#][#api-allow export news#][#api-allow patch news#]");
    expect(r.granted).toEqual([]);
    expect(r.ignored.length).toBe(3);
  });
});

describe("login lock lengths", () => {
  test("none under the limit, then doubling, capped at one hour", () => {
    expect(lockFor(4, 5, 60)).toBe(0);
    expect(lockFor(5, 5, 60)).toBe(60_000);
    expect(lockFor(6, 5, 60)).toBe(120_000);
    expect(lockFor(8, 5, 60)).toBe(480_000);
    expect(lockFor(50, 5, 60)).toBe(MAX_LOCK_MS);
  });
});

describe("form key", () => {
  const site = { config: { tokenSecret: "unit-test-secret" } } as unknown as Site;
  const other = { config: { tokenSecret: "another-secret" } } as unknown as Site;
  test("valid for its resource and site, within a day", () => {
    const now = 1_800_000_000;
    const { form_key } = issueFormKey(site, "contact", now);
    expect(formKeyValid(site, "contact", form_key, now + 10)).toBe(true);
    expect(formKeyValid(site, "news", form_key, now + 10)).toBe(false);
    expect(formKeyValid(other, "contact", form_key, now + 10)).toBe(false);
    expect(formKeyValid(site, "contact", form_key, now + 86_401)).toBe(false);
    expect(formKeyValid(site, "contact", "garbage", now)).toBe(false);
    expect(formKeyValid(site, "contact", 42, now)).toBe(false);
  });
  test("stripFormFields removes the fields and leaves the rest alone", () => {
    const { form_key } = issueFormKey(site, "contact");
    expect(stripFormFields(site, "contact", { name: "a", _form_key: form_key, _hp: "" })).toEqual({ name: "a" });
    const same = { name: "b" };
    expect(stripFormFields(site, "contact", same)).toBe(same);
    expect(() => stripFormFields(site, "contact", { _hp: "x" })).toThrow(AppError);
  });
});

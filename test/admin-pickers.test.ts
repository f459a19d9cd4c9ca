/**
 * Relation and tag pickers (issue 33, "What an editor expects next"), in chromium: a select naming
 * another resource is a searchable combobox (type to find, titles shown, "create new" in a drawer),
 * a multi select of fixed options is a tag picker (chips, type to filter). Kept values are checked
 * through the API; keyboard-only use and axe with the pickers open.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chromium, type Browser, type Page } from "playwright-core";
import { adminSite } from "./helpers/site";
import { sessionPage, until } from "./helpers/page-wait";
import { expectNoAxeViolations } from "./helpers/axe";
import { addUser } from "./helpers/access";

/** Authors are named (`name`): a pick stores the name, as the server's own options do. Lists follow the definitions' `sort`. */
const authors = { name: { singular: "Author", plural: "Authors" }, sort: { field: "name", order: "asc" }, fields: { name: { type: "text", required: true }, bio: { type: "textarea" } } };
/** Categories have a title and no name: a pick stores the uuid. */
const categories = { name: { singular: "Category", plural: "Categories" }, sort: { field: "title", order: "asc" }, fields: { title: { type: "text", required: true }, note: { type: "text" } } };
const articles = {
  name: { singular: "Article", plural: "Articles" },
  fields: {
    title: { type: "text", required: true },
    author: { type: "select", resource: "authors" },
    tags: { type: "select", multi: true, options: { news: "News", sport: "Sport", tech: "Technology", arts: "Arts" } },
    categories: { type: "select", multi: true, resource: "categories" },
    status: { type: "select", options: { draft: "Draft", live: "Live" } },
  },
};

const AUTHORS = 300;
/** More than the 500 options `.resources` resolves, so titles beyond them come from the API. */
const CATEGORIES = 520;
const pad = (i: number) => String(i).padStart(3, "0");

let s: Awaited<ReturnType<typeof adminSite>>;
let browser: Browser;
const categoryUuid = new Map<string, string>();

async function createMany(resource: string, bodies: Record<string, unknown>[]): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < bodies.length; i += 25) {
    const replies = await Promise.all(bodies.slice(i, i + 25).map((b) => s.apiJson("POST", `/api/v1/${resource}`, b)));
    for (const r of replies) {
      expect(r.status).toBe(201);
      out.push(Object.keys(r.body![resource])[0]);
    }
  }
  return out;
}

beforeAll(async () => {
  s = await adminSite({ defs: { authors, categories, articles } });
  await createMany("authors", Array.from({ length: AUTHORS }, (_, i) => ({ name: `Author ${pad(i + 1)}` })));
  const cats = Array.from({ length: CATEGORIES }, (_, i) => ({ title: `Category ${pad(i + 1)}` }));
  const uuids = await createMany("categories", cats);
  cats.forEach((c, i) => categoryUuid.set(c.title, uuids[i]));
  await s.apiJson("POST", "/api/v1/roles", { name: "writer", permissions: ["view-articles", "create-articles", "edit-articles", "view-authors", "view-categories"] });
  await addUser(s.dir, "writer@example.com", "writer-password", { role: "writer" });
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await s?.cleanup();
});

const signedIn = (path: string) => sessionPage(browser, s.base, path);
const field = (page: Page, name: string) => page.locator(`[data-field="${name}"]`);
const combo = (page: Page, name: string) => field(page, name).getByRole("combobox");
const listbox = (page: Page, name: string) => field(page, name).getByRole("listbox");
const chips = (page: Page, name: string) => field(page, name).locator(".chips li .chip-label").allTextContents();
const stored = async (uuid: string) => (await s.apiJson("GET", `/api/v1/articles/${uuid}`)).body!.articles[uuid] as Record<string, unknown>;
const newUuid = (page: Page) => new URL(page.url()).pathname.split("/").at(-1)!;
async function saveNew(page: Page): Promise<string> {
  await page.getByRole("button", { name: "Save" }).click();
  await page.waitForURL((u) => /^\/admin\/articles\/[^/]+$/.test(u.pathname) && !u.pathname.endsWith("/new"));
  return newUuid(page);
}
/** The texts of the options the listbox shows once it has settled on `first`. */
async function optionsOnceFirstIs(page: Page, name: string, first: string): Promise<string[]> {
  const options = listbox(page, name).getByRole("option");
  await options.first().filter({ hasText: first }).waitFor({ timeout: 5000 });
  return options.allTextContents();
}

describe("relation picker (a select naming another resource)", () => {
  test("type to find among 300 authors: the list API is searched, never all loaded; the pick stores the author", async () => {
    const page = await signedIn("/admin/articles/new");
    const lists: string[] = [];
    page.on("request", (r) => { if (new URL(r.url()).pathname === "/api/v1/authors") lists.push(r.url()); });
    await field(page, "title").locator("input").fill("Found by typing");
    const author = combo(page, "author");
    expect(await author.getAttribute("aria-expanded")).toBe("false");
    await author.click();
    await until(page, `document.querySelector('[data-field="author"] [role=combobox]').getAttribute("aria-expanded") === "true"`);
    const firstPage = await optionsOnceFirstIs(page, "author", "Author 001");
    expect(firstPage.length).toBeGreaterThan(1);
    expect(firstPage.length).toBeLessThan(AUTHORS);
    await author.pressSequentially("27");
    const found = await optionsOnceFirstIs(page, "author", "Author 027");
    // "Create new author …" closes the list for those who may create authors.
    expect(found.at(-1)).toMatch(/^Create new author/);
    expect(found.slice(0, -1)).toEqual(["Author 027", "Author 127", "Author 227", "Author 270", "Author 271", "Author 272", "Author 273", "Author 274", "Author 275", "Author 276", "Author 277", "Author 278", "Author 279"]);
    // Every list read was a bounded page; typing searched (debounced: not one request per key).
    expect(lists.length).toBeGreaterThan(0);
    for (const u of lists) expect(Number(new URL(u).searchParams.get("limit"))).toBeLessThanOrEqual(50);
    expect(lists.some((u) => new URL(u).searchParams.get("search") === "27")).toBe(true);
    expect(lists.length).toBeLessThanOrEqual(2);
    await listbox(page, "author").getByRole("option", { name: "Author 274" }).click();
    expect(await author.inputValue()).toBe("Author 274");
    expect(await author.getAttribute("aria-expanded")).toBe("false");
    const uuid = await saveNew(page);
    expect((await stored(uuid)).author).toBe("Author 274");
    await page.close();
  });

  test("an opened record shows the chosen titles (also beyond the first 500 options); clearing and removing", async () => {
    const c1 = categoryUuid.get("Category 002")!;
    const c2 = categoryUuid.get("Category 515")!;
    const created = await s.apiJson("POST", "/api/v1/articles", { title: "Opened", author: "Author 010", categories: [c1, c2] });
    const uuid = Object.keys(created.body!.articles)[0];
    const page = await signedIn(`/admin/articles/${uuid}`);
    await until(page, `document.querySelector('[data-field="author"] [role=combobox]')?.value === "Author 010"`);
    await field(page, "categories").locator(".chips li", { hasText: "Category 515" }).waitFor({ timeout: 5000 });
    expect(await chips(page, "categories")).toEqual(["Category 002", "Category 515"]);
    // Typing into a chosen author replaces its title (focus selects it); leaving without a pick restores it.
    await combo(page, "author").click();
    await combo(page, "author").pressSequentially("Author 02");
    expect(await combo(page, "author").inputValue()).toBe("Author 02");
    await combo(page, "author").press("Escape");
    await field(page, "title").locator("input").focus();
    expect(await combo(page, "author").inputValue()).toBe("Author 010");
    // Not required: the author can be cleared.
    await field(page, "author").getByRole("button", { name: "Clear Author" }).click();
    expect(await combo(page, "author").inputValue()).toBe("");
    await field(page, "categories").getByRole("button", { name: "Remove Category 002" }).click();
    expect(await chips(page, "categories")).toEqual(["Category 515"]);
    // Add a category by typing: the multi picker searches the other resource too.
    await combo(page, "categories").pressSequentially("51");
    const offered = await optionsOnceFirstIs(page, "categories", "Category 051");
    expect(offered).not.toContain("Category 515"); // already chosen
    await listbox(page, "categories").getByRole("option", { name: "Category 519" }).click();
    expect(await chips(page, "categories")).toEqual(["Category 515", "Category 519"]);
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByText("Saved.").waitFor();
    const r = await stored(uuid);
    expect(r.author ?? "").toBe("");
    expect(r.categories).toEqual([c2, categoryUuid.get("Category 519")]);
    // The read-only view names the records too, without inputs.
    const view = await signedIn(`/admin/articles/${uuid}?view=1`);
    await field(view, "categories").locator(".chips li", { hasText: "Category 519" }).waitFor({ timeout: 5000 });
    expect(await field(view, "categories").locator("input").count()).toBe(0);
    await view.close();
    await page.close();
  });

  test("create new in a drawer: the record is made in the other resource and picked", async () => {
    const page = await signedIn("/admin/articles/new");
    await field(page, "title").locator("input").fill("With new records");
    await combo(page, "author").pressSequentially("Zora Neale");
    const create = listbox(page, "author").getByRole("option", { name: /Create new author/ });
    await create.waitFor({ timeout: 5000 });
    await create.click();
    const drawer = page.getByRole("dialog", { name: "New author" });
    await drawer.waitFor();
    // What was typed is the new record's name.
    await until(page, `document.querySelector('dialog.drawer [data-field="name"] input')?.value === "Zora Neale"`);
    await drawer.locator('[data-field="bio"] textarea').fill("Made from the picker.");
    await drawer.getByRole("button", { name: "Create author" }).click();
    await drawer.waitFor({ state: "detached" });
    expect(await combo(page, "author").inputValue()).toBe("Zora Neale");
    const made = await s.apiJson("GET", `/api/v1/authors?filter=${encodeURIComponent("name:Zora Neale")}`);
    expect(Object.values(made.body!.authors as Record<string, Record<string, unknown>>).map((a) => a.bio)).toEqual(["Made from the picker."]);
    // A multi relation too: the new category becomes a chip.
    await combo(page, "categories").pressSequentially("Brand new category");
    await listbox(page, "categories").getByRole("option", { name: /Create new category/ }).click();
    const catDrawer = page.getByRole("dialog", { name: "New category" });
    await catDrawer.waitFor();
    // A refused record keeps the drawer open with the server's message at the field.
    await catDrawer.locator('[data-field="title"] input').fill("");
    await catDrawer.getByRole("button", { name: "Create category" }).click();
    await catDrawer.locator('[data-field="title"] .error').waitFor({ timeout: 5000 });
    await catDrawer.locator('[data-field="title"] input').fill("Brand new category");
    await catDrawer.getByRole("button", { name: "Create category" }).click();
    await catDrawer.waitFor({ state: "detached" });
    expect(await chips(page, "categories")).toEqual(["Brand new category"]);
    const uuid = await saveNew(page);
    const r = await stored(uuid);
    expect(r.author).toBe("Zora Neale");
    const cats = await s.apiJson("GET", `/api/v1/categories?filter=${encodeURIComponent("title:Brand new category")}`);
    expect(r.categories).toEqual(Object.keys(cats.body!.categories));
    await page.close();
  });

  test("create new is offered only to those who may create in the other resource", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(`${s.base}/admin/sign-in?next=${encodeURIComponent("/admin/articles/new")}`);
    await page.getByLabel("E-mail").fill("writer@example.com");
    await page.getByLabel("Password").fill("writer-password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL((u) => u.pathname === "/admin/articles/new");
    await combo(page, "author").pressSequentially("Nobody at all");
    await field(page, "author").getByRole("status").filter({ hasText: /No author/ }).waitFor({ timeout: 5000 });
    expect(await listbox(page, "author").getByRole("option").count()).toBe(0);
    await combo(page, "author").fill("");
    await combo(page, "author").pressSequentially("Author 005");
    await optionsOnceFirstIs(page, "author", "Author 005");
    expect(await listbox(page, "author").getByRole("option", { name: /Create new/ }).count()).toBe(0);
    await page.close();
  });
});

describe("relation picker where the server keeps uuids (a user's role, reference: uuid)", () => {
  test("the role is found by its name and stored as the role's uuid; an opened user shows the name", async () => {
    const roles = await s.apiJson("GET", `/api/v1/roles?filter=${encodeURIComponent("name:writer")}`);
    const writer = Object.keys(roles.body!.roles)[0];
    const page = await signedIn("/admin/users/new");
    await field(page, "email").locator("input").fill("picked-role@example.com");
    await field(page, "password").locator("input").fill("a-long-password-1");
    await combo(page, "role").pressSequentially("wri");
    await optionsOnceFirstIs(page, "role", "writer");
    await combo(page, "role").press("Enter");
    expect(await combo(page, "role").inputValue()).toBe("writer");
    await page.getByRole("button", { name: "Save" }).click();
    await page.waitForURL((u) => /^\/admin\/users\/[^/]+$/.test(u.pathname) && !u.pathname.endsWith("/new"));
    const uuid = newUuid(page);
    expect((await s.apiJson("GET", `/api/v1/users/${uuid}`)).body!.users[uuid].role).toBe(writer);
    await page.reload();
    await until(page, `document.querySelector('[data-field="role"] [role=combobox]')?.value === "writer"`);
    await page.close();
  });
});

describe("tag picker (a multi select of fixed options)", () => {
  test("chips, type to filter, remove by button or Backspace; the stored list follows", async () => {
    const page = await signedIn("/admin/articles/new");
    await field(page, "title").locator("input").fill("Tagged");
    const tags = combo(page, "tags");
    await tags.pressSequentially("te");
    expect(await listbox(page, "tags").getByRole("option").allTextContents()).toEqual(["Technology"]);
    await tags.press("Enter");
    expect(await chips(page, "tags")).toEqual(["Technology"]);
    expect(await tags.inputValue()).toBe("");
    await tags.pressSequentially("r");
    expect(await listbox(page, "tags").getByRole("option").allTextContents()).toEqual(["Sport", "Arts"]);
    await listbox(page, "tags").getByRole("option", { name: "Sport" }).click();
    await tags.pressSequentially("ar");
    await tags.press("Enter");
    expect(await chips(page, "tags")).toEqual(["Technology", "Sport", "Arts"]);
    await field(page, "tags").getByRole("button", { name: "Remove Sport" }).click();
    expect(await chips(page, "tags")).toEqual(["Technology", "Arts"]);
    await tags.focus();
    await tags.press("Backspace");
    expect(await chips(page, "tags")).toEqual(["Technology"]);
    // A single select of fixed options stays a dropdown.
    expect(await field(page, "status").locator("select").count()).toBe(1);
    const uuid = await saveNew(page);
    expect((await stored(uuid)).tags).toEqual(["tech"]);
    await page.close();
  });
});

describe("keyboard and screen readers", () => {
  test("keyboard only: arrows move the active option (aria-activedescendant), Enter picks, Escape closes, Ctrl+S saves", async () => {
    const page = await signedIn("/admin/articles/new");
    await field(page, "title").locator("input").focus();
    await page.keyboard.type("Keyboard only");
    await page.keyboard.press("Tab");
    expect(await page.evaluate(`document.activeElement === document.querySelector('[data-field="author"] [role=combobox]')`)).toBe(true);
    await page.keyboard.type("12");
    await optionsOnceFirstIs(page, "author", "Author 012");
    const active = async () => (await page.evaluate(`(() => { const c = document.querySelector('[data-field="author"] [role=combobox]'); const id = c.getAttribute("aria-activedescendant"); return id ? document.getElementById(id)?.textContent : null; })()`)) as string | null;
    expect(await active()).toBe("Author 012");
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("ArrowDown");
    expect(await active()).toBe("Author 120");
    await page.keyboard.press("ArrowUp");
    expect(await active()).toBe("Author 112");
    await page.keyboard.press("Escape");
    expect(await combo(page, "author").getAttribute("aria-expanded")).toBe("false");
    expect(await combo(page, "author").getAttribute("aria-activedescendant")).toBeNull();
    await page.keyboard.press("ArrowDown");
    expect(await combo(page, "author").getAttribute("aria-expanded")).toBe("true");
    await optionsOnceFirstIs(page, "author", "Author 012");
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("Enter");
    expect(await combo(page, "author").inputValue()).toBe("Author 112");
    // Tab on to the tag picker (past the clear button), pick two, take one back with Backspace.
    await page.keyboard.press("Tab");
    if (await page.evaluate(`document.activeElement?.getAttribute("aria-label") === "Clear Author"`)) await page.keyboard.press("Tab");
    expect(await page.evaluate(`document.activeElement === document.querySelector('[data-field="tags"] [role=combobox]')`)).toBe(true);
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("Enter");
    await page.keyboard.type("spo");
    await page.keyboard.press("Enter");
    await page.keyboard.type("art");
    await page.keyboard.press("Enter");
    expect(await chips(page, "tags")).toEqual(["News", "Sport", "Arts"]);
    await page.keyboard.press("Backspace");
    expect(await chips(page, "tags")).toEqual(["News", "Sport"]);
    // The categories: the arrow opens the list, typing narrows it, Enter picks; then one is created in the drawer.
    await page.keyboard.press("Tab");
    expect(await page.evaluate(`document.activeElement === document.querySelector('[data-field="categories"] [role=combobox]')`)).toBe(true);
    await page.keyboard.press("ArrowDown");
    await until(page, `document.querySelector('[data-field="categories"] [role=combobox]').getAttribute("aria-expanded") === "true"`);
    await page.keyboard.type("Category 00");
    await optionsOnceFirstIs(page, "categories", "Category 001");
    await page.keyboard.press("Enter");
    await page.keyboard.type("Keyboard category");
    await listbox(page, "categories").getByRole("option", { name: /Create new category/ }).waitFor({ timeout: 5000 });
    await page.keyboard.press("End"); // stays in the text: it does not move through the list
    await page.keyboard.press("ArrowUp"); // from the top, up wraps to the last option: create
    expect(await page.evaluate(`(() => { const c = document.querySelector('[data-field="categories"] [role=combobox]'); return document.getElementById(c.getAttribute("aria-activedescendant"))?.textContent; })()`)).toMatch(/Create new category/);
    await page.keyboard.press("Enter");
    await page.getByRole("dialog", { name: "New category" }).waitFor();
    // Focus is in the drawer, on its first field; Escape closes it and returns to the picker.
    await until(page, `document.activeElement === document.querySelector('dialog.drawer [data-field="title"] input')`, 3000);
    await page.keyboard.press("Escape");
    await page.getByRole("dialog", { name: "New category" }).waitFor({ state: "detached" });
    expect(await page.evaluate(`document.activeElement === document.querySelector('[data-field="categories"] [role=combobox]')`)).toBe(true);
    await page.keyboard.press("ArrowDown");
    await listbox(page, "categories").getByRole("option", { name: /Create new category/ }).waitFor({ timeout: 5000 });
    await page.keyboard.press("ArrowUp");
    await page.keyboard.press("Enter");
    await page.getByRole("dialog", { name: "New category" }).waitFor();
    // The drawer's form is there once its starting values have come (the first field then has focus).
    await until(page, `document.activeElement === document.querySelector('dialog.drawer [data-field="title"] input')`, 3000);
    await page.keyboard.press("Control+s"); // in the drawer: creates the category, not the article
    await page.getByRole("dialog", { name: "New category" }).waitFor({ state: "detached" });
    expect(await chips(page, "categories")).toEqual(["Category 001", "Keyboard category"]);
    expect(await page.evaluate(`document.activeElement === document.querySelector('[data-field="categories"] [role=combobox]')`)).toBe(true);
    expect(new URL(page.url()).pathname).toBe("/admin/articles/new");
    await page.keyboard.press("Control+s");
    await page.waitForURL((u) => !u.pathname.endsWith("/new"));
    const r = await stored(newUuid(page));
    expect(r).toMatchObject({ title: "Keyboard only", author: "Author 112", tags: ["news", "sport"] });
    const kc = await s.apiJson("GET", `/api/v1/categories?filter=${encodeURIComponent("title:Keyboard category")}`);
    expect(r.categories).toEqual([categoryUuid.get("Category 001"), ...Object.keys(kc.body!.categories)]);
    await page.close();
  });

  test("axe finds nothing on the form with each picker open, nor in the drawer", async () => {
    const page = await signedIn("/admin/articles/new");
    await combo(page, "author").click();
    await optionsOnceFirstIs(page, "author", "Author 001");
    await expectNoAxeViolations(page, "the form with the relation picker open");
    await combo(page, "author").press("Escape");
    await combo(page, "tags").pressSequentially("s");
    await listbox(page, "tags").getByRole("option").first().waitFor();
    await combo(page, "tags").press("Enter");
    await combo(page, "tags").pressSequentially("e");
    await expectNoAxeViolations(page, "the form with a chip and the tag picker open");
    await combo(page, "tags").press("Escape");
    await combo(page, "categories").pressSequentially("Nothing like this");
    await listbox(page, "categories").getByRole("option", { name: /Create new category/ }).click();
    await page.getByRole("dialog", { name: "New category" }).waitFor();
    await expectNoAxeViolations(page, "the create-new drawer");
    await page.close();
  });
});

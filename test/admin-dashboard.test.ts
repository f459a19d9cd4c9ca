/**
 * The admin's editing tools (issue 34), in chromium: the dashboard's git card pulls an update pushed
 * to the site's remote (a bare repository in a temporary folder, the site folder a clone of it) and
 * the new resource is in the Resources menu at once; a refused pull shows git's words; the Pages
 * screen lists route files, endpoints and record pages and edits a route file; the html editor's
 * link dialog links to a record page by its URL. Each screen with zero axe-core violations.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { adminSite, cli, makeSite, serve, type Server } from "./helpers/site";
import { call } from "./helpers/access";
import { sessionPage, until } from "./helpers/page-wait";
import { expectNoAxeViolations } from "./helpers/axe";
import { def, gitIn } from "./helpers/git";

/** The test's own git: a fixed author, no user or system configuration (signing, hooks). */

// The site of the git card: a clone of a bare repository; `dev` is the developer's clone.
let root = "";
let dev = "";
let gitSite: Server;
let gitToken = "";

/** Writes files in the developer's clone, commits and pushes. */
function push(message: string, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dev, path)), { recursive: true });
    writeFileSync(join(dev, path), text);
    gitIn(dev, "add", path);
  }
  gitIn(dev, "commit", "-q", "-m", message);
  gitIn(dev, "push", "-q", "origin", "main");
}

// The site of the Pages screen and the link dialog.
const notes = {
  name: { singular: "Note", plural: "Notes" },
  fields: { title: { type: "text", required: true }, slug: { type: "text" }, published: { type: "boolean" } },
  sitemap: { url: "/notes/[#record.slug#]", published: "published" },
};
const articles = {
  name: { singular: "Article", plural: "Articles" },
  fields: { title: { type: "text", required: true }, body: { type: "html", buttons: "bold,anchor", admin_col: false } },
};
const EXT = `export default function (api) {
  api.route("GET", "/hello", () => ({ hi: true }), { public: true });
}
`;
let s: Awaited<ReturnType<typeof adminSite>>;
let browser: Browser;

const PASSWORD = "user-password-1";

/** A role with `permissions` and a user holding it, through the API of the site at `base`. */
async function userWith(base: string, token: string, name: string, permissions: string[]): Promise<string> {
  const role = await call(base, "POST", "/api/v1/roles", { token, body: { name, permissions } });
  if (role.status !== 201) throw new Error(JSON.stringify(role.body));
  const email = `${name}@example.com`;
  const user = await call(base, "POST", "/api/v1/users", { token, body: { email, password: PASSWORD, role: Object.keys(role.body!.roles)[0] } });
  if (user.status !== 201) throw new Error(JSON.stringify(user.body));
  return email;
}

/** A page signed in as another user than the admin (through the API: the session cookie is the context's). */
async function pageAs(base: string, email: string, path: string, viewport = { width: 1280, height: 800 }): Promise<Page> {
  const page = await browser.newPage({ viewport });
  page.on("pageerror", (e) => console.error("pageerror:", e.message));
  const r = await page.request.post(`${base}/api/v1/session`, { data: { email, password: PASSWORD } });
  expect(r.status()).toBe(200);
  await page.goto(`${base}${path}`);
  return page;
}

/** Nothing makes the document wider than the window. */
const noSidewaysScroll = async (page: Page) =>
  expect(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")).toBe(true);

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "resd-dashboard-"));
  const remote = join(root, "remote.git");
  gitIn(root, "init", "-q", "--bare", "-b", "main", remote);
  dev = join(root, "dev");
  gitIn(root, "clone", "-q", remote, dev);
  push("first: news", { ".gitignore": "data/\n.env\n", "resources/news.json": def({ title: { type: "text", required: true } }, { name: { singular: "News item", plural: "News" } }) });
  const dir = makeSite();
  gitIn(dir, "clone", "-q", remote, ".");
  const add = await cli(dir, ["user", "add", "admin@example.com", "--password", "admin-password", "--role", "admin", "--api"]);
  if (add.code !== 0) throw new Error(add.stderr);
  gitToken = (await cli(dir, ["token", "admin@example.com"])).stdout.trim();
  [gitSite, s] = await Promise.all([
    serve(dir),
    adminSite({
      defs: { notes, articles },
      files: {
        "ext/uri/about/index.tpl": "About us\n",
        "ext/uri/api/v1/notes/index.tpl": "[#api-allow post notes#]\n",
        "ext/hooks.ts": EXT,
      },
    }),
  ]);
  for (const [title, slug, published] of [["Hello World", "hello-world", true], ["Spring festival", "spring-festival", true], ["Zebra crossing", "zebra", false]] as const) {
    expect((await s.apiJson("POST", "/api/v1/notes", { title, slug, published })).status).toBe(201);
  }
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await gitSite?.stop();
  if (gitSite) rmSync(gitSite.dir, { recursive: true, force: true });
  await s?.cleanup();
  if (root) rmSync(root, { recursive: true, force: true });
});

describe("the dashboard's git card", () => {
  const card = (page: Page) => page.locator("section.git-card");
  const state = (page: Page) => card(page).locator('[data-git="state"]');

  test("behind 1 after a push; Pull takes it, lists the commit and the new resource, which is in the Resources menu at once", async () => {
    const page = await sessionPage(browser, gitSite.base, "/admin");
    await until(page, `document.querySelector('[data-git="state"]')?.textContent.includes("Up to date with origin/main")`);
    expect(await card(page).locator('[data-git="branch"]').textContent()).toContain("main");
    expect(await card(page).locator('[data-git="head"]').textContent()).toContain("first: news");
    expect(await card(page).locator('[data-git="head"]').textContent()).toContain("Ann Author");
    expect(await card(page).locator('[data-git="changed"]').textContent()).toContain("none");
    await expectNoAxeViolations(page, "the dashboard with its git card");

    push("events: a new resource", {
      "resources/events.json": def({ title: { type: "text", required: true } }, { name: { singular: "Event", plural: "Events" } }),
      "ext/hello.ts": "export default function () {}\n",
    });
    // A marker that a page load would lose: the menu must change without one.
    await page.evaluate("window.__noReload = true");
    await card(page).getByRole("button", { name: "Check again" }).click();
    await until(page, `document.querySelector('[data-git="state"]')?.textContent.includes("behind 1")`);
    const menu = page.locator('details[data-menu="resources"]');
    expect(await menu.locator('a[href="/admin/events"]').count()).toBe(0);

    await card(page).getByRole("button", { name: "Pull" }).click();
    const result = card(page).locator("[data-git-result]");
    await result.waitFor();
    const text = (await result.textContent())!;
    expect(text).toContain("Pulled 1 commit from origin/main");
    expect(text).toContain("events: a new resource");
    expect(await result.locator('[data-defs="added"]').textContent()).toBe("Resources added: Events");
    expect(await result.locator("[data-restart]").textContent()).toContain("ext/hello.ts");
    expect(await result.locator("[data-restart]").textContent()).toContain("restart resd");
    await until(page, `document.querySelector('[data-git="state"]')?.textContent.includes("Up to date")`);
    await menu.locator("summary").click();
    await menu.locator('a[href="/admin/events"]').waitFor();
    expect(await menu.locator('a[href="/admin/events"]').textContent()).toBe("Events");
    expect(await page.evaluate("window.__noReload === true")).toBe(true);
    expect((await call(gitSite.base, "GET", "/api/v1/events", { token: gitToken })).status).toBe(200);
    await menu.locator("summary").click();
    await expectNoAxeViolations(page, "the dashboard after a pull");

    // Pulling again: nothing to take, said so.
    await card(page).getByRole("button", { name: "Pull" }).click();
    await until(page, `document.querySelector('[data-git-result]')?.textContent.includes("Already up to date")`);
    await page.close();
  });

  test("a refused pull shows why and git's own words; the local change is listed", async () => {
    push("news gets a summary", { "resources/news.json": def({ title: { type: "text", required: true }, summary: { type: "textarea" } }) });
    writeFileSync(join(gitSite.dir, "resources/news.json"), def({ title: { type: "text", required: true }, teaser: { type: "text" } }));
    try {
      const page = await sessionPage(browser, gitSite.base, "/admin");
      await until(page, `document.querySelector('[data-git="state"]')?.textContent.includes("behind 1")`);
      expect(await card(page).locator('[data-git="changed"]').textContent()).toContain("resources/news.json");
      await card(page).getByRole("button", { name: "Pull" }).click();
      const refusal = card(page).locator(".git-refusal");
      await refusal.waitFor();
      expect(await refusal.locator("strong").textContent()).toBe("Not pulled: files the pull would change have local changes on the server.");
      const words = (await refusal.locator("pre.git-words").textContent())!;
      // git's own words (they vary with git's version: "not uptodate", "would be overwritten").
      expect(words).toContain("resources/news.json");
      expect(words).toMatch(/^error: .*(not uptodate|would be overwritten)/);
      expect(await refusal.locator("li").allTextContents()).toEqual(["resources/news.json"]);
      expect(await refusal.getAttribute("role")).toBe("alert");
      await expectNoAxeViolations(page, "the dashboard with a refused pull");
      await page.close();
    } finally {
      gitIn(gitSite.dir, "checkout", "--", "resources/news.json");
    }
  });

  test("on a phone: the card fits the width", async () => {
    const page = await sessionPage(browser, gitSite.base, "/admin", { width: 390, height: 844 });
    await card(page).locator('[data-git="state"]').waitFor();
    await noSidewaysScroll(page);
    await expectNoAxeViolations(page, "the dashboard on a phone");
    await page.close();
  });

  test("an editor without view-git sees no card", async () => {
    const email = await userWith(gitSite.base, gitToken, "editor", ["view-news", "create-news", "edit-news"]);
    const page = await pageAs(gitSite.base, email, "/admin");
    await page.locator("h1").waitFor();
    await page.locator('ul.cards a[href="/admin/news"]').waitFor();
    expect(await card(page).count()).toBe(0);
    await page.close();
  });
});

describe("the Pages screen", () => {
  const rows = (page: Page) => page.locator("table.pages-list tbody tr[data-page]");
  const urlsShown = async (page: Page) => (await rows(page).locator("td.page-url").allTextContents()).sort();

  test("reached from the Administration menu: route files, the endpoint and record pages, filtered by kind, searched, both in the URL", async () => {
    const page = await sessionPage(browser, s.base, "/admin");
    const menu = page.locator('details[data-menu="admin"]');
    await menu.locator("summary").click();
    await menu.getByRole("link", { name: "Site pages" }).click();
    await page.waitForURL((u) => u.pathname === "/admin/-/pages");
    await until(page, `document.querySelectorAll("table.pages-list tbody tr[data-page]").length === 6`);
    expect(await urlsShown(page)).toEqual(["/about", "/api/v1/notes", "/hello", "/notes/hello-world", "/notes/spring-festival", "/notes/zebra"]);
    const row = (url: string) => rows(page).filter({ has: page.locator("td.page-url", { hasText: new RegExp(`^${url}$`) }) });
    expect(await row("/about").getAttribute("data-kind")).toBe("route");
    expect(await row("/hello").getAttribute("data-kind")).toBe("endpoint");
    expect(await row("/hello").textContent()).toContain("GET ext/hooks.ts");
    expect(await row("/notes/zebra").getAttribute("data-kind")).toBe("record");
    expect(await row("/notes/zebra").textContent()).toContain("Zebra crossing");
    expect(await row("/notes/zebra").textContent()).toContain("not published");
    expect(await row("/api/v1/notes").textContent()).toContain("post notes");
    expect(await page.locator(".total").textContent()).toBe("6 pages");
    await expectNoAxeViolations(page, "the Pages screen");

    await page.getByLabel("Kind").selectOption("record");
    await page.waitForURL((u) => u.searchParams.get("kind") === "record");
    await until(page, `[...document.querySelectorAll("table.pages-list tbody tr[data-page]")].every((r) => r.dataset.kind === "record") && document.querySelectorAll("table.pages-list tbody tr[data-page]").length === 3`);
    await page.getByLabel("Search URLs and titles").fill("festival");
    await page.getByLabel("Search URLs and titles").press("Enter");
    await page.waitForURL((u) => u.searchParams.get("search") === "festival" && u.searchParams.get("kind") === "record");
    await until(page, `document.querySelectorAll("table.pages-list tbody tr[data-page]").length === 1`);
    expect(await urlsShown(page)).toEqual(["/notes/spring-festival"]);
    // A record page opens the record's form.
    expect(await rows(page).locator("td.page-url a").getAttribute("href")).toMatch(/^\/admin\/notes\/[0-9a-f-]{36}$/);

    await page.getByLabel("Kind").selectOption("route");
    await page.getByLabel("Search URLs and titles").fill("");
    await page.getByLabel("Search URLs and titles").press("Enter");
    await until(page, `document.querySelectorAll("table.pages-list tbody tr[data-page]").length === 2`);
    expect(await urlsShown(page)).toEqual(["/about", "/api/v1/notes"]);
    await page.close();
  });

  test("a route file is edited in a text area and saved to disk; a text the server refuses is shown; history rolls back", async () => {
    const file = join(s.dir, "ext/uri/about/index.tpl");
    const page = await sessionPage(browser, s.base, "/admin/-/pages?kind=route");
    await page.getByRole("link", { name: "/about" }).click();
    await page.waitForURL((u) => /^\/admin\/-\/pages\/[0-9a-f]{32}$/.test(u.pathname));
    const area = page.getByLabel("Text of the route file");
    await until(page, `document.querySelector("#route-text")?.value === "About us\\n"`);
    expect(await page.locator("h1").textContent()).toBe("Route file /about");
    await area.fill("About us, and more\n");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByText("Saved.").waitFor();
    expect(readFileSync(file, "utf8")).toBe("About us, and more\n");
    await expectNoAxeViolations(page, "the route file editor");

    // An allow tag naming no resource: refused with the server's words, nothing written.
    await area.fill("[#api-allow post nosuch#]\n");
    await area.press("Control+s");
    const alert = page.locator('p.error[role="alert"]');
    await alert.waitFor();
    expect(await alert.textContent()).toContain("Not saved:");
    expect(await alert.textContent()).toContain('no resource "nosuch"');
    expect(readFileSync(file, "utf8")).toBe("About us, and more\n");

    // The history: the text found on disk first, then the saved one; roll back to the first.
    await area.fill("About us, and more\n");
    await page.getByRole("button", { name: "History" }).click();
    const dialog = page.locator("dialog[open]");
    await dialog.locator("li[data-entry]").nth(1).waitFor();
    expect(await dialog.locator("li[data-entry] strong").allTextContents()).toEqual(["Changed", "Created"]);
    await expectNoAxeViolations(page, "a route file's history");
    await dialog.getByRole("button", { name: "Roll back to this version" }).click();
    await page.getByText(/^Rolled back to the version of/).waitFor();
    expect(readFileSync(file, "utf8")).toBe("About us\n");
    await until(page, `document.querySelector("#route-text")?.value === "About us\\n"`);
    await page.close();
  });

  test("a new route file: 409 for a URL that has one; created on disk; deleted and restored", async () => {
    const page = await sessionPage(browser, s.base, "/admin/-/pages");
    page.on("dialog", (d) => void d.accept());
    await page.getByRole("link", { name: "New route file" }).click();
    await page.waitForURL((u) => u.pathname === "/admin/-/pages/new");
    await page.getByLabel("URL path").fill("/api/v1/notes");
    await page.getByLabel("Text of the route file").fill("[#api-allow post notes#]\n");
    await page.getByRole("button", { name: "Create" }).click();
    const alert = page.locator('p.error[role="alert"]');
    await alert.waitFor();
    expect(await alert.getAttribute("data-status")).toBe("409");
    expect(await alert.textContent()).toContain("That URL has a route file already.");
    await expectNoAxeViolations(page, "a new route file, refused");

    await page.getByLabel("URL path").fill("/contact");
    await page.getByLabel("Text of the route file").fill("Write to us\n");
    await page.getByRole("button", { name: "Create" }).click();
    await page.waitForURL((u) => /^\/admin\/-\/pages\/[0-9a-f]{32}$/.test(u.pathname));
    const file = join(s.dir, "ext/uri/contact/index.tpl");
    await page.locator("h1", { hasText: "Route file /contact" }).waitFor();
    expect(readFileSync(file, "utf8")).toBe("Write to us\n");

    await page.getByRole("button", { name: "Delete" }).click();
    await page.getByRole("button", { name: "Restore" }).waitFor();
    expect(existsSync(file)).toBe(false);
    expect(await page.locator("main").textContent()).toContain("The route file of /contact was deleted");
    await page.getByRole("button", { name: "Restore" }).click();
    await page.locator("h1", { hasText: "Route file /contact" }).waitFor();
    expect(readFileSync(file, "utf8")).toBe("Write to us\n");
    await page.close();
  });

  test("on a phone: the list and the editor fit the width", async () => {
    const page = await sessionPage(browser, s.base, "/admin/-/pages", { width: 390, height: 844 });
    await until(page, `document.querySelectorAll("table.pages-list tbody tr[data-page]").length >= 6`);
    await noSidewaysScroll(page);
    await expectNoAxeViolations(page, "the Pages screen on a phone");
    await page.getByRole("link", { name: "/api/v1/notes" }).click();
    await page.getByLabel("Text of the route file").waitFor();
    await noSidewaysScroll(page);
    await page.close();
  });

  test("an editor without the permissions: not in the menu, a clear message at its URL", async () => {
    const email = await userWith(s.base, s.token, "writer", ["view-articles", "create-articles", "edit-articles", "view-notes", "view-.files"]);
    const page = await pageAs(s.base, email, "/admin");
    const menu = page.locator('details[data-menu="admin"]');
    await menu.waitFor();
    await menu.locator("summary").click();
    expect(await menu.getByRole("link", { name: "Media library" }).count()).toBe(1);
    expect(await menu.getByRole("link", { name: "Site pages" }).count()).toBe(0);
    await page.goto(`${s.base}/admin/-/pages`);
    const alert = page.locator('main [role="alert"]');
    await alert.waitFor();
    expect(await alert.textContent()).toContain("view-.pages");
    expect(await page.locator("table.pages-list").count()).toBe(0);
    await page.close();
  });
});

describe("the html editor's link dialog", () => {
  const stored = async (uuid: string) => (await s.apiJson("GET", `/api/v1/articles/${uuid}`)).body!.articles[uuid] as Record<string, string>;

  test("links the selected text to a record page found by part of its title; an empty address removes the link", async () => {
    const page = await sessionPage(browser, s.base, "/admin/articles/new");
    await page.locator('[data-field="title"] input').fill("Linked article");
    const editor = page.locator('[data-html-field="body"] .html-editor');
    await editor.click();
    await page.keyboard.type("See the festival");
    await page.keyboard.press("Control+a");
    await page.locator('[data-html-field="body"] .toolbar-row [data-button="anchor"]').click();
    const dialog = page.locator("dialog[open]");
    await dialog.getByLabel("Or link to a page of the site").waitFor();
    expect(await dialog.locator("h2").textContent()).toBe("Add a link");
    await dialog.getByLabel("Or link to a page of the site").fill("festi");
    const option = dialog.getByRole("option", { name: /Spring festival — \/notes\/spring-festival/ });
    await option.waitFor();
    // Route files are offered too; endpoints are not.
    expect(await dialog.getByRole("option").count()).toBe(1);
    await expectNoAxeViolations(page, "the link dialog with its list of pages");
    await dialog.getByLabel("Or link to a page of the site").press("Enter");
    await until(page, `!document.querySelector("dialog[open]")`);
    expect(await editor.innerHTML()).toContain('<a href="/notes/spring-festival">See the festival</a>');
    await editor.press("Control+s");
    await page.waitForURL((u) => /^\/admin\/articles\/[0-9a-f-]{36}$/.test(u.pathname));
    const uuid = new URL(page.url()).pathname.split("/").at(-1)!;
    expect((await stored(uuid)).body).toBe('<p><a href="/notes/spring-festival">See the festival</a></p>');

    // The cursor in the link: the dialog shows its address; emptied, the link goes.
    await page.locator('[data-html-field="body"] .html-editor a').click();
    await page.locator('[data-html-field="body"] .toolbar-row [data-button="anchor"]').click();
    await dialog.getByLabel("Link address (empty removes the link)").waitFor();
    expect(await dialog.locator("h2").textContent()).toBe("Edit link");
    expect(await dialog.getByLabel("Link address (empty removes the link)").inputValue()).toBe("/notes/spring-festival");
    await dialog.getByLabel("Link address (empty removes the link)").fill("");
    await dialog.getByLabel("Link address (empty removes the link)").press("Enter");
    await until(page, `!document.querySelector("dialog[open]")`);
    await editor.press("Control+s");
    await page.getByText("Saved.").waitFor();
    expect((await stored(uuid)).body).toBe("<p>See the festival</p>");

    // A typed address, with nothing selected: the address is inserted as the link's text.
    await editor.click();
    await page.keyboard.press("End");
    await page.keyboard.type(" ");
    await page.locator('[data-html-field="body"] .toolbar-row [data-button="anchor"]').click();
    await dialog.getByLabel("Link address (empty removes the link)").fill("/about");
    await dialog.getByRole("button", { name: "Set link" }).click();
    await until(page, `!document.querySelector("dialog[open]")`);
    await editor.press("Control+s");
    await page.getByText("Saved.").waitFor();
    expect((await stored(uuid)).body).toBe('<p>See the festival <a href="/about">/about</a></p>');
    await page.close();
  });

  test("an editor who may view notes only finds their record pages; on a phone the dialog fits", async () => {
    const page = await pageAs(s.base, "writer@example.com", "/admin/articles/new", { width: 390, height: 844 });
    await page.locator('[data-html-field="body"] .toolbar-row [data-button="anchor"]').click();
    const dialog = page.locator("dialog[open]");
    await dialog.getByLabel("Or link to a page of the site").click();
    await dialog.getByRole("option").first().waitFor();
    const options = await dialog.getByRole("option").allTextContents();
    expect(options.length).toBe(3);
    expect(options.every((o) => o.includes("/notes/"))).toBe(true);
    await noSidewaysScroll(page);
    await expectNoAxeViolations(page, "the link dialog on a phone");
    await page.close();
  });
});

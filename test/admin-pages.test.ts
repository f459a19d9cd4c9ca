/**
 * The admin pages in a real browser (Debian's chromium driven by playwright-core) against the real
 * server: sign-in, the Resources menu, overview columns, filters in the URL, sort and paging,
 * delete and restore, users without edit-users, CSV import.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { adminSite } from "./helpers/site";
import { addUser } from "./helpers/access";

const notes = {
  name: { singular: "Note", plural: "Notes" },
  fields: {
    title: { type: "text", required: true },
    status: { type: "select", options: { new: "New", open: "Open", done: "Done" }, admin_filter: { default: "open" } },
    tags: { type: "select", multi: true, options: { red: "Red", blue: "Blue" }, admin_filter: true },
    published: { type: "boolean", admin_filter: { feature: "see-published-filter" } },
    year: { type: "number" },
    body: { type: "html", admin_col: false },
  },
  admin_columns: ["title", "status", "tags", "year", "_modified"],
  actions: { url: "https://example.com/notes/[#record.title#]" },
};
const secrets = { fields: { code: { type: "text" } } };
const hiddenBar = { appbar: false, fields: { n: { type: "number" } } };

type Site = Awaited<ReturnType<typeof adminSite>>;
let s: Site;
let browser: Browser;

/** 30 notes: status cycles new/open/done, tags alternate red / red+blue / none, years 2000+i. */
beforeAll(async () => {
  s = await adminSite({ defs: { notes, secrets, counters: hiddenBar } });
  const body: Record<string, unknown>[] = [];
  for (let i = 0; i < 30; i++) {
    body.push({ title: `Note ${String(i).padStart(2, "0")}`, status: ["new", "open", "done"][i % 3], tags: [["red"], ["red", "blue"], []][i % 3], year: 2000 + i, published: i % 2 === 0 });
  }
  for (const b of body) expect((await s.apiJson("POST", "/api/v1/notes", b)).status).toBe(201);
  await s.apiJson("POST", "/api/v1/roles", { name: "note-viewer", permissions: ["view-notes", "view-users", "create-users"] });
  await addUser(s.dir, "viewer@example.com", "viewer-password", { role: "note-viewer" });
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await s?.cleanup();
});

/** Each user's cookies and storage right after their first sign-in through the form. */
const sessions = new Map<string, Awaited<ReturnType<BrowserContext["storageState"]>>>();

/**
 * A page at `path` signed in as the user: the first time through the sign-in page the admin sends
 * an unknown visitor to (and back), later in a new context holding that sign-in's session.
 */
async function signedIn(email = "admin@example.com", password = "admin-password", path = "/admin"): Promise<Page> {
  const kept = sessions.get(email);
  if (kept) {
    const context = await browser.newContext({ storageState: kept, viewport: { width: 1200, height: 800 } });
    const page = await context.newPage();
    page.on("close", () => void context.close().catch(() => {}));
    page.on("dialog", (d) => void d.accept());
    await page.goto(s.base + path);
    await page.waitForURL((u) => u.pathname === new URL(s.base + path).pathname);
    return page;
  }
  const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  page.on("dialog", (d) => void d.accept());
  await page.goto(s.base + path);
  await page.waitForURL(/\/admin\/sign-in\?next=/);
  await page.getByLabel("E-mail").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL((u) => u.pathname === new URL(s.base + path).pathname);
  sessions.set(email, await page.context().storageState());
  return page;
}

const titles = (page: Page) => page.locator("tbody tr[data-uuid] td[data-col=title]").allTextContents();
async function settled(page: Page) {
  await page.waitForSelector("main.overview[aria-busy=false]");
}
/**
 * The first title once the list shows `expected` there, or whatever it shows after 5 s. After a
 * click, the URL changes before the list starts loading, so `settled` alone may still see the old list.
 */
async function firstTitle(page: Page, expected: string): Promise<string | undefined> {
  const deadline = Date.now() + 5000;
  for (;;) {
    await settled(page);
    const first = (await titles(page))[0];
    if (first === expected || Date.now() > deadline) return first;
    await Bun.sleep(50);
  }
}

describe("admin pages in chromium", () => {
  test("sign-in returns to the page asked for; the Resources menu shows exactly the permitted appbar resources", async () => {
    const page = await signedIn("admin@example.com", "admin-password", "/admin/notes");
    await settled(page);
    await page.getByText("Resources").click();
    const items = await page.locator("[data-menu=resources] li a").allTextContents();
    expect(items).toEqual(["Notes", "Secrets"]); // counters: appbar false; users and roles in the admin menu
    await page.getByText("Administration").click();
    expect(await page.locator("[data-menu=admin] li a").allTextContents()).toEqual(["Users", "Roles", "Media library", "Site pages"]);
    await page.close();

    const viewer = await signedIn("viewer@example.com", "viewer-password", "/admin");
    await viewer.getByText("Resources").click();
    expect(await viewer.locator("[data-menu=resources] li a").allTextContents()).toEqual(["Notes"]);
    await viewer.close();
  });

  test("the overview shows admin_columns in order, values by type, and the total", async () => {
    const page = await signedIn("admin@example.com", "admin-password", "/admin/notes?filter[status]=");
    await settled(page);
    expect(await page.locator("thead th button.sort").allTextContents()).toEqual(["Title", "Status", "Tags", "Year", "Modified"]);
    expect(await page.locator(".total").getAttribute("data-total")).toBe("30");
    const row = page.locator("tbody tr", { hasText: "Note 28" }); // 28 % 3 === 1: open, red and blue
    expect(await row.locator("td[data-col=status]").textContent()).toBe("Open"); // label, not the stored value
    expect(await row.locator("td[data-col=tags] .chip").allTextContents()).toEqual(["Red", "Blue"]);
    await page.close();
  });

  test("filters: chosen in the page they appear in the URL; absent, empty and invalid values follow the seed", async () => {
    const page = await signedIn("admin@example.com", "admin-password", "/admin/notes");
    await settled(page);
    // Absent: the default (open) applies.
    expect((await titles(page)).length).toBe(10);
    expect(await page.locator("select[name='filter[status]']").inputValue()).toBe("open");
    await page.selectOption("select[name='filter[tags]']", "blue");
    await page.waitForURL(/filter%5Btags%5D=blue|filter\[tags\]=blue/);
    await settled(page);
    // open AND contains blue: i % 3 === 1 holds both.
    expect((await titles(page)).length).toBe(10);
    await page.selectOption("select[name='filter[status]']", "done");
    await settled(page);
    await page.locator("tbody tr[data-uuid]").first().waitFor({ state: "detached" });
    expect(new URL(page.url()).searchParams.get("filter[status]")).toBe("done");
    await page.close();

    const empty = await signedIn("admin@example.com", "admin-password", "/admin/notes?filter[status]=");
    await settled(empty);
    expect(await empty.locator(".total").getAttribute("data-total")).toBe("30");
    await empty.goto(`${s.base}/admin/notes?filter[status]=bogus&filter[tags]=red`);
    await settled(empty);
    expect(await empty.locator("select[name='filter[status]']").inputValue()).toBe("");
    expect(await empty.locator(".total").getAttribute("data-total")).toBe("20"); // invalid → All; red: i%3 ∈ {0,1}
    // The published filter has a feature permission the admin holds through (all).
    expect(await empty.locator("select[name='filter[published]']").count()).toBe(1);
    await empty.close();

    const viewer = await signedIn("viewer@example.com", "viewer-password", "/admin/notes");
    await settled(viewer);
    expect(await viewer.locator("select[name='filter[published]']").count()).toBe(0);
    await viewer.close();
  });

  test("sort by column header and page through", async () => {
    const page = await signedIn("admin@example.com", "admin-password", "/admin/notes?filter[status]=");
    await settled(page);
    await page.locator("select", { hasText: "100" }).last().selectOption("10");
    await settled(page);
    await page.getByRole("button", { name: "Year" }).click();
    await page.waitForURL(/sort=year/);
    expect(await firstTitle(page, "Note 00")).toBe("Note 00");
    await page.getByRole("button", { name: /Year/ }).click();
    await page.waitForURL(/sort=year%7Cdesc|sort=year\|desc/);
    expect(await firstTitle(page, "Note 29")).toBe("Note 29");
    await page.getByRole("button", { name: "Next" }).click();
    await page.waitForURL(/page=2/);
    expect(await firstTitle(page, "Note 19")).toBe("Note 19");
    expect(await page.locator("nav.pager input[name=page]").inputValue()).toBe("2");
    expect(await page.locator("nav.pager").textContent()).toContain("of 3");
    // A page is reached by its number; one past the end shows the last page.
    await page.locator("nav.pager input[name=page]").fill("3");
    await page.locator("nav.pager input[name=page]").press("Enter");
    await page.waitForURL(/page=3/);
    expect(await firstTitle(page, "Note 09")).toBe("Note 09");
    await page.goto(page.url().replace("page=3", "page=40"));
    await page.waitForURL(/page=3(&|$)/);
    expect(await page.locator("nav.pager input[name=page]").inputValue()).toBe("3");
    await page.close();
  });

  test("delete with confirmation, then restore from the deleted list and roll back from history", async () => {
    const page = await signedIn("admin@example.com", "admin-password", "/admin/notes?filter[status]=&search=Note%2005");
    await settled(page);
    expect(await titles(page)).toEqual(["Note 05"]);
    const uuid = (await page.locator("tbody tr[data-uuid]").first().getAttribute("data-uuid"))!;
    await page.locator("tbody tr", { hasText: "Note 05" }).getByRole("button", { name: "Actions" }).click();
    await page.getByRole("menuitem", { name: "Delete" }).click();
    await page.locator("tbody tr[data-uuid]").first().waitFor({ state: "detached" });
    expect((await s.apiJson("GET", `/api/v1/notes/${uuid}`)).status).toBe(404);
    await page.getByRole("button", { name: "Deleted" }).click();
    await page.locator(`.deleted li[data-uuid="${uuid}"]`).getByRole("button", { name: "Restore" }).click();
    await page.waitForSelector(`tbody tr[data-uuid="${uuid}"]`);
    expect((await s.apiJson("GET", `/api/v1/notes/${uuid}`)).body!.notes[uuid].title).toBe("Note 05");

    // A change, then roll back to the first version from the History dialog.
    expect((await s.apiJson("PUT", `/api/v1/notes/${uuid}`, { title: "Note 05 changed" })).status).toBe(200);
    await page.goto(`${s.base}/admin/notes?filter[status]=&search=Note%2005`);
    await settled(page);
    await page.locator(`tbody tr[data-uuid="${uuid}"]`).getByRole("button", { name: "Actions" }).click();
    await page.getByRole("menuitem", { name: "History" }).click();
    const dialog = page.locator("dialog");
    await dialog.locator("li", { hasText: "Changed" }).first().waitFor();
    expect(await dialog.locator(".diff td.new").allTextContents()).toContain("Note 05 changed");
    await dialog.locator("li", { hasText: "Created" }).getByRole("button", { name: "Roll back to this version" }).click();
    // The roll back closes the dialog and the row shows the version rolled back to.
    await page.locator(`tbody tr[data-uuid="${uuid}"] td[data-col=title]`, { hasText: /^Note 05$/ }).waitFor({ timeout: 3000 });
    expect(await page.locator("dialog[open]").count()).toBe(0);
    expect((await s.apiJson("GET", `/api/v1/notes/${uuid}`)).body!.notes[uuid].title).toBe("Note 05");
    await page.close();
  });

  test("a user without edit-users sees no API-access toggle; an admin does", async () => {
    const viewer = await signedIn("viewer@example.com", "viewer-password", "/admin/users/new");
    await viewer.waitForSelector("[data-field=email]");
    expect(await viewer.locator("[data-field=api]").count()).toBe(0);
    expect(await viewer.locator("[data-field=password]").count()).toBe(1);
    await viewer.close();
    const admin = await signedIn("admin@example.com", "admin-password", "/admin/users/new");
    await admin.waitForSelector("[data-field=email]");
    expect(await admin.locator("[data-field=api] input[role=switch]").count()).toBe(1);
    // The role select offers the roles by name and stores the uuid.
    await admin.locator("[data-field=role] [role=combobox]").click();
    await admin.locator("[data-field=role] [role=option]", { hasText: "note-viewer" }).waitFor();
    await admin.close();
  });

  test("import a CSV from the page: progress, counts and per-row errors", async () => {
    const page = await signedIn("admin@example.com", "admin-password", "/admin/notes?filter[status]=");
    await settled(page);
    await page.getByRole("button", { name: "Import" }).click();
    await page.locator("dialog input[type=file]").setInputFiles({ name: "notes.csv", mimeType: "text/csv", buffer: Buffer.from("title,status,year\nImported A,new,1999\n,new,1998\nImported B,open,x\n") });
    await page.locator("dialog").getByRole("button", { name: "Import" }).click();
    const result = page.locator(".import-result");
    await result.waitFor();
    expect(await result.locator("p").first().textContent()).toBe("1 created, 0 updated, 2 rows with errors.");
    expect(await result.locator("table.errors tbody tr").count()).toBe(2);
    // Each failing row says why, at its field.
    const first = await result.locator("table.errors tbody tr").first().locator("td").allTextContents();
    expect(first[0]).toBe("2");
    expect(first[1]).toBe("title");
    expect(first[2].length).toBeGreaterThan(3);
    expect((await s.apiJson("GET", "/api/v1/notes?filter=title:Imported A")).body!.count).toBe(1);
    await page.close();
  });

  test("a role's permissions are edited in the grid and saved", async () => {
    const page = await signedIn("admin@example.com", "admin-password", "/admin/roles/new");
    await page.locator("[data-field=name] input").fill("editors");
    await page.locator("input[data-permission='edit-notes']").check();
    await page.locator("input[data-permission='view-notes']").check();
    await page.getByRole("button", { name: "Save" }).click();
    await page.waitForURL(/\/admin\/roles\/[0-9a-f-]{36}$/);
    const roles = (await s.apiJson("GET", "/api/v1/roles?filter=name:editors")).body!.roles as Record<string, { permissions: string[] }>;
    expect(Object.values(roles)[0].permissions.sort()).toEqual(["edit-notes", "view-notes"]);
    await page.close();
  });

  test("bulk: set one field for the selected rows in one PUT; a change by someone else shows up without a reload", async () => {
    const page = await signedIn("admin@example.com", "admin-password", "/admin/notes?filter[status]=new&sort=year%7Casc");
    await settled(page);
    const rows = page.locator("tbody tr[data-uuid]");
    const before = await rows.count();
    const uuids = [(await rows.nth(0).getAttribute("data-uuid"))!, (await rows.nth(1).getAttribute("data-uuid"))!];
    for (const u of uuids) await page.locator(`tr[data-uuid="${u}"] input[type=checkbox]`).check();
    const bulk = page.locator("section.bulk");
    await bulk.locator("select").first().selectOption("status");
    await bulk.locator("select").nth(1).selectOption("done");
    await bulk.getByRole("button", { name: "Apply to selected" }).click();
    await rows.nth(before - 2).waitFor({ state: "detached", timeout: 10_000 });
    for (const u of uuids) expect((await s.apiJson("GET", `/api/v1/notes/${u}`)).body!.notes[u].status).toBe("done");

    const first = (await rows.nth(0).getAttribute("data-uuid"))!;
    expect((await s.apiJson("PUT", `/api/v1/notes/${first}`, { title: "Changed elsewhere" })).status).toBe(200);
    await page.locator(`tr[data-uuid="${first}"] td[data-col=title]`, { hasText: "Changed elsewhere" }).waitFor({ timeout: 12_000 });
    await page.close();
  });

  test("deep links work on reload; an unknown resource says so", async () => {
    const page = await signedIn("admin@example.com", "admin-password", "/admin/notes?filter[status]=done&sort=year%7Cdesc");
    await settled(page);
    await page.reload();
    await settled(page);
    expect((await titles(page))[0]).toBe("Note 29");
    await page.goto(`${s.base}/admin/nothing-here`);
    await page.getByText("Not found").waitFor();
    await page.close();
  });
});

/**
 * The editor's day (issue 33), in chromium: defects an editorial trial found in the admin pages,
 * each as the editor met it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chromium, type Browser, type Page } from "playwright-core";
import { adminSite } from "./helpers/site";
import { signedInPage } from "./helpers/page-wait";

const articles = {
  name: { singular: "Article", plural: "Articles" },
  fields: {
    title: { type: "text", required: true },
    summary: { type: "textarea" },
    rating: { type: "number" },
    body: { type: "html", buttons: "h2,bold", admin_col: false },
  },
};

let s: Awaited<ReturnType<typeof adminSite>>;
let browser: Browser;
beforeAll(async () => {
  s = await adminSite({ defs: { articles } });
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await s?.cleanup();
});

const signedIn = (path: string) => signedInPage(browser, s.base, path);

const count = async () => (await s.apiJson("GET", "/api/v1/articles?limit=1")).body!.total as number;

describe("3. saving is an explicit action", () => {
  test("Enter in a single-line field creates nothing; the Save button and Ctrl+S save", async () => {
    const before = await count();
    const page = await signedIn("/admin/articles/new");
    const title = page.locator('[data-field="title"] input');
    await title.fill("Half-typed title");
    await title.press("Enter");
    await page.locator('[data-field="rating"] input').fill("3");
    await page.locator('[data-field="rating"] input').press("Enter");
    // Give a submission every chance to arrive before looking.
    await Bun.sleep(500);
    expect(await count()).toBe(before);
    expect(new URL(page.url()).pathname).toBe("/admin/articles/new");
    // Enter still makes new lines where text has lines.
    await page.locator('[data-field="summary"] textarea').fill("first");
    await page.locator('[data-field="summary"] textarea').press("Enter");
    await page.locator('[data-field="summary"] textarea').type("second");
    expect(await page.locator('[data-field="summary"] textarea').inputValue()).toBe("first\nsecond");
    // Ctrl+S saves from anywhere in the form.
    await title.press("Control+s");
    await page.waitForURL((u) => /^\/admin\/articles\/[^/]+$/.test(u.pathname) && !u.pathname.endsWith("/new"));
    expect(await count()).toBe(before + 1);
    const uuid = new URL(page.url()).pathname.split("/").at(-1)!;
    expect((await s.apiJson("GET", `/api/v1/articles/${uuid}`)).body!.articles[uuid]).toMatchObject({ title: "Half-typed title", summary: "first\nsecond", rating: 3 });
    // On an existing record Enter changes nothing on the server either; Meta+S (macOS) saves too.
    await title.fill("Edited title");
    await title.press("Enter");
    await Bun.sleep(300);
    expect((await s.apiJson("GET", `/api/v1/articles/${uuid}`)).body!.articles[uuid].title).toBe("Half-typed title");
    await title.press("Meta+s");
    await page.getByText("Saved.").waitFor();
    expect((await s.apiJson("GET", `/api/v1/articles/${uuid}`)).body!.articles[uuid].title).toBe("Edited title");
    await page.close();
  });
});

describe("2. the html editor's toolbar is there from the first paint", () => {
  const toolbar = (page: Page) => page.locator('[data-html-field="body"] [role="toolbar"]');

  test("on a new form: reached by keyboard, a heading started before any keystroke in the text", async () => {
    const page = await signedIn("/admin/articles/new");
    await page.locator('[data-field="title"] input').fill("With a heading");
    await toolbar(page).locator('[data-button="h2"]').waitFor({ timeout: 3000 });
    // Tab from the field before the editor reaches the toolbar, without touching the editor.
    await page.locator('[data-field="rating"] input').focus();
    await page.keyboard.press("Tab");
    expect(await page.evaluate("document.activeElement?.dataset?.button")).toBe("h2");
    await page.keyboard.press("Enter");
    await page.locator('[data-html-field="body"] .html-editor').click();
    await page.keyboard.type("Chapter one");
    await page.locator("form.fields").press("Control+s");
    await page.waitForURL((u) => !u.pathname.endsWith("/new"));
    const uuid = new URL(page.url()).pathname.split("/").at(-1)!;
    expect((await s.apiJson("GET", `/api/v1/articles/${uuid}`)).body!.articles[uuid].body).toBe("<h2>Chapter one</h2>");
    await page.close();
  });

  test("on an existing record, at once", async () => {
    const created = await s.apiJson("POST", "/api/v1/articles", { title: "Existing", body: "<p>Some text</p>" });
    const uuid = Object.keys(created.body!.articles)[0];
    const page = await signedIn(`/admin/articles/${uuid}`);
    await toolbar(page).locator('[data-button="bold"]').waitFor({ timeout: 3000 });
    expect(await toolbar(page).locator("button").count()).toBe(2);
    await page.close();
  });
});

/**
 * The admin on a desk (1280×800) and on a phone (390×844), as an editorial trial used it: the
 * overview's rows become cards with their actions in reach, dialogs take the screen, nothing
 * scrolls sideways, each row is one tab stop, and axe finds nothing. Writes the screenshots in
 * docs/ (admin-{overview,form,history}-{desktop,phone}.png).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { adminSite, ROOT } from "./helpers/site";
import { sessionPage, until } from "./helpers/page-wait";
import { expectNoAxeViolations } from "./helpers/axe";

const DESK = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

const authors = { name: { singular: "Author", plural: "Authors" }, fields: { name: { type: "text", required: true } } };
const articles = {
  name: { singular: "Article", plural: "Articles" },
  languages: ["en", "de"],
  fields: {
    title: { type: "text", required: true },
    slug: { type: "slug", source: "title", admin_col: false },
    category: { type: "select", options: { news: "News", culture: "Culture", science: "Science and technology" } },
    published: { type: "boolean" },
    rating: { type: "number" },
    summary: { type: "textarea", i18n: true },
    tags: { type: "select", multi: true, options: { a: "Analysis", i: "Interview", r: "Review" } },
    author: { type: "select", resource: "authors", reference: "uuid" },
    body: { type: "html", admin_col: false },
    sections: { type: "group", admin_col: false, fields: { heading: { type: "text" }, text: { type: "textarea" } } },
  },
};

let s: Awaited<ReturnType<typeof adminSite>>;
let browser: Browser;
let first: string;
beforeAll(async () => {
  s = await adminSite({ defs: { authors, articles } });
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  const author = await s.apiJson("POST", "/api/v1/authors", { name: "Ada Lovelace-Byron" });
  const authorUuid = Object.keys(author.body!.authors)[0];
  const rows = Array.from({ length: 30 }, (_, i) => ({
    title: `A rather long headline about the state of things, number ${i + 1}`,
    category: ["news", "culture", "science"][i % 3], published: i % 2 === 0, rating: i % 5,
    summary: { en: `Summary ${i + 1} in English, long enough to wrap on a small screen`, de: `Zusammenfassung ${i + 1}` },
    tags: ["a", "r"], author: authorUuid, body: `<p>Body ${i + 1}</p>`,
    sections: [{ heading: "One", text: "First section" }],
  }));
  for (const r of rows) expect((await s.apiJson("POST", "/api/v1/articles", r)).status).toBe(201);
  const list = await s.apiJson("GET", "/api/v1/articles?sort=_created|desc&limit=1");
  first = Object.keys(list.body!.articles)[0];
  expect((await s.apiJson("PUT", `/api/v1/articles/${first}`, { title: "A headline changed after review", summary: { en: "A new summary", de: "Zusammenfassung 30" }, body: "<p>Body thirty, revised</p>", tags: ["i"] })).status).toBe(200);
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await s?.cleanup();
});

const open = (path: string, viewport = DESK) => sessionPage(browser, s.base, path, viewport);
const settled = (page: Page) => page.locator("tbody tr[data-uuid]").first().waitFor();
const sideways = (page: Page) => page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth") as Promise<number>;
const shot = (page: Page, name: string) => page.screenshot({ path: join(ROOT, `docs/${name}.png`) });

describe("the overview", () => {
  test("on a desk: one tab stop per row, the arrow keys reach the rest, axe finds nothing", async () => {
    const page = await open("/admin/articles");
    await settled(page);
    const stops = await page.evaluate(`[...document.querySelectorAll("tbody tr[data-uuid]")].map(tr => [...tr.querySelectorAll("a[href], button, input, select, textarea, [tabindex]")].filter(e => e.tabIndex >= 0 && !e.disabled).length)`) as number[];
    expect(stops.length).toBe(25);
    expect(new Set(stops)).toEqual(new Set([1]));
    // Tab reaches the first row's link; arrows move to the next row and to its actions.
    await page.locator("tbody tr[data-index='0'] td.title-cell a").focus();
    await page.keyboard.press("ArrowDown");
    expect(await page.evaluate("document.activeElement.closest('tr')?.dataset.index")).toBe("1");
    await page.keyboard.press("ArrowRight");
    expect(await page.evaluate("document.activeElement.getAttribute('aria-haspopup')")).toBe("menu");
    await page.keyboard.press("Enter");
    await page.getByRole("menuitem", { name: "Edit" }).waitFor();
    expect(await page.evaluate("document.activeElement.getAttribute('role')")).toBe("menuitem");
    await expectNoAxeViolations(page, "the overview with a row's menu open (desk)");
    await page.keyboard.press("Escape");
    expect(await page.evaluate("document.activeElement.getAttribute('aria-haspopup')")).toBe("menu");
    await page.keyboard.press("ArrowLeft");
    await page.keyboard.press("ArrowLeft");
    expect(await page.evaluate("document.activeElement.type")).toBe("checkbox");
    await page.keyboard.press("Space");
    await page.locator("section.bulk").waitFor();
    await page.keyboard.press("Space");
    await shot(page, "admin-overview-desktop");
    await expectNoAxeViolations(page, "the overview (desk)");
    await page.close();
  });

  test("on a phone: rows are cards in the screen's width, actions in reach; axe finds nothing", async () => {
    const page = await open("/admin/articles", PHONE);
    await settled(page);
    expect(await sideways(page)).toBeLessThanOrEqual(0);
    const row = page.locator("tbody tr[data-index='0']");
    // A card: its title, two key columns, the others out of the way, the menu button inside the screen.
    expect(await row.locator("td.title-cell").isVisible()).toBe(true);
    expect(await row.locator("td.key-cell:visible").count()).toBe(2);
    expect(await row.locator("td.extra-cell:visible").count()).toBe(0);
    const menu = row.getByRole("button", { name: /Actions/ });
    const box = (await menu.boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(PHONE.width);
    await menu.click();
    const item = page.getByRole("menuitem", { name: "History" });
    const itemBox = (await item.boundingBox())!;
    expect(itemBox.x).toBeGreaterThanOrEqual(0);
    expect(itemBox.x + itemBox.width).toBeLessThanOrEqual(PHONE.width);
    await page.keyboard.press("Escape");
    await shot(page, "admin-overview-phone");
    await expectNoAxeViolations(page, "the overview (phone)");
    await page.close();
  });
});

describe("history", () => {
  for (const [where, viewport] of [["desktop", DESK], ["phone", PHONE]] as const) {
    test(`on a ${where === "desktop" ? "desk" : "phone"}: the diff fits its dialog${where === "phone" ? ", which takes the screen" : ""}; axe finds nothing`, async () => {
      const page = await open(`/admin/articles?search=${encodeURIComponent("changed after review")}`, viewport);
      await settled(page);
      await page.locator(`tr[data-uuid="${first}"]`).getByRole("button", { name: /Actions/ }).click();
      await page.getByRole("menuitem", { name: "History" }).click();
      const dialog = page.locator("dialog[open]");
      await dialog.locator("li[data-entry] table.diff").first().waitFor();
      const fits = await page.evaluate(`(() => { const d = document.querySelector("dialog[open]"); return [...d.querySelectorAll("table.diff")].every(t => t.getBoundingClientRect().right <= d.getBoundingClientRect().right + 0.5) && d.scrollWidth <= d.clientWidth; })()`);
      expect(fits).toBe(true);
      if (where === "phone") {
        const box = (await dialog.boundingBox())!;
        expect(Math.round(box.width)).toBe(PHONE.width);
        expect(Math.round(box.height)).toBe(PHONE.height);
      }
      expect(await sideways(page)).toBeLessThanOrEqual(0);
      await shot(page, `admin-history-${where}`);
      await expectNoAxeViolations(page, `the history dialog (${where})`);
      await page.close();
    });
  }
});

describe("the form", () => {
  for (const [where, viewport] of [["desktop", DESK], ["phone", PHONE]] as const) {
    test(`on a ${where === "desktop" ? "desk" : "phone"}: nothing wider than the screen; axe finds nothing`, async () => {
      const page = await open(`/admin/articles/${first}`, viewport);
      await page.locator('[data-html-field="body"] [role="toolbar"]').waitFor();
      expect(await sideways(page)).toBeLessThanOrEqual(0);
      // A boolean is drawn as a switch (a track and a knob), not as a bare checkbox.
      const look = await page.evaluate(`(() => { const e = document.querySelector('[data-field="published"] input[role=switch]'); const st = getComputedStyle(e); return [st.appearance, e.getBoundingClientRect().width, getComputedStyle(e, "::before").content]; })()`);
      expect(look).toEqual(["none", 40, '""']);
      await page.screenshot({ path: join(ROOT, `docs/admin-form-${where}.png`), fullPage: true });
      await expectNoAxeViolations(page, `the form (${where})`);
      await page.close();
    });
  }
});

describe("users and roles on a phone", () => {
  for (const path of ["/admin/users", "/admin/roles"]) {
    test(`${path}: nothing clipped or sideways; axe finds nothing`, async () => {
      const page = await open(path, PHONE);
      await settled(page);
      expect(await sideways(page)).toBeLessThanOrEqual(0);
      const clipped = await page.evaluate(`[...document.querySelectorAll("tbody tr[data-uuid] td:not(.extra-cell)")].filter(td => td.getBoundingClientRect().right > innerWidth + 0.5).length`);
      expect(clipped).toBe(0);
      await expectNoAxeViolations(page, `${path} (phone)`);
      await page.locator("tbody tr[data-index='0'] td.title-cell a").click();
      await page.locator("form.fields").waitFor();
      await until(page, "document.querySelectorAll('form.fields [data-field]').length > 0");
      expect(await sideways(page)).toBeLessThanOrEqual(0);
      await expectNoAxeViolations(page, `a record of ${path} (phone)`);
      await page.close();
    });
  }
});

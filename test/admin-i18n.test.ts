/**
 * The admin speaks the browser's language for its own words where a translation exists (English
 * and German today), dates included; any other language gets English. Every text the admin passes
 * through t()/tn() has its German, so a new English text cannot slip in untranslated.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { Glob } from "bun";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { adminSite, ROOT } from "./helpers/site";
import { expectNoAxeViolations } from "./helpers/axe";

const articles = {
  name: { singular: "Artikel", plural: "Artikel" },
  fields: { title: { type: "text", required: true }, published: { type: "boolean" } },
};

let s: Awaited<ReturnType<typeof adminSite>>;
let browser: Browser;
let uuid: string;
beforeAll(async () => {
  s = await adminSite({ defs: { articles } });
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  const r = await s.apiJson("POST", "/api/v1/articles", { title: "Erster Artikel", published: true });
  uuid = Object.keys(r.body!.articles)[0];
  expect((await s.apiJson("PUT", `/api/v1/articles/${uuid}`, { title: "Erster Artikel, überarbeitet" })).status).toBe(200);
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await s?.cleanup();
});

/** A page in a browser set to `locale`, signed in through the API (the sign-in form is translated too). */
async function pageIn(locale: string, path: string): Promise<Page> {
  const context = await browser.newContext({ locale, viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const signIn = await page.request.post(`${s.base}/api/v1/session`, { data: { email: "admin@example.com", password: "admin-password" } });
  expect(signIn.status()).toBe(200);
  await page.goto(`${s.base}${path}`);
  return page;
}

describe("in a German browser", () => {
  test("the overview, its menus and the history speak German; dates are written the German way", async () => {
    const page = await pageIn("de-DE", "/admin/articles");
    await page.locator("tbody tr[data-uuid]").first().waitFor();
    expect(await page.evaluate("document.documentElement.lang")).toBe("de");
    expect(await page.getByRole("link", { name: "Artikel anlegen" }).count()).toBe(1);
    expect(await page.getByRole("button", { name: "Importieren" }).count()).toBe(1);
    expect(await page.locator("nav.pager").textContent()).toContain("Seite");
    await page.locator(`tr[data-uuid="${uuid}"]`).getByRole("button", { name: /Aktionen für/ }).click();
    await page.getByRole("menuitem", { name: "Verlauf" }).click();
    const dialog = page.locator("dialog[open]");
    await dialog.locator("li[data-entry]").first().waitFor();
    expect(await dialog.locator("h2").textContent()).toBe("Verlauf von „Erster Artikel, überarbeitet“");
    expect(await dialog.locator("li[data-entry] strong").allTextContents()).toEqual(["Geändert", "Angelegt"]);
    // 27.11.2026, 07:13:54 — day, month, year, as German readers write them.
    expect(await dialog.locator("li[data-entry] time").first().textContent()).toMatch(/^\d{1,2}\.\d{1,2}\.\d{4}/);
    expect(await dialog.getByRole("button", { name: "Auf diese Fassung zurücksetzen" }).count()).toBe(1);
    await expectNoAxeViolations(page, "the German overview with its history dialog");
    await page.close();
  });

  test("the form says what is wrong in German", async () => {
    const page = await pageIn("de-DE", "/admin/articles/new");
    await page.locator("form.fields").waitFor();
    expect(await page.locator("h1").textContent()).toBe("Artikel anlegen");
    await page.getByRole("button", { name: "Speichern" }).click();
    await page.locator(".error-summary").waitFor();
    expect(await page.locator(".error-summary h2").textContent()).toBe("Ein Feld braucht Ihre Aufmerksamkeit");
    await page.close();
  });
});

test("a language the admin does not speak gets English", async () => {
  const page = await pageIn("fr-FR", "/admin/articles");
  await page.locator("tbody tr[data-uuid]").first().waitFor();
  expect(await page.evaluate("document.documentElement.lang")).toBe("en");
  expect(await page.getByRole("button", { name: "Import" }).count()).toBe(1);
  await page.close();
});

test("every text the admin translates has its German, and the German has nothing left over", async () => {
  const used = new Set<string>();
  for (const file of new Glob("src/admin/**/*.{ts,tsx}").scanSync(ROOT)) {
    const text = readFileSync(join(ROOT, file), "utf8");
    for (const m of text.matchAll(/\bt\(\s*"((?:[^"\\]|\\.)*)"/g)) used.add(JSON.parse(`"${m[1]}"`));
    for (const m of text.matchAll(/\btn\([^,]+,\s*"((?:[^"\\]|\\.)*)",\s*"((?:[^"\\]|\\.)*)"/g)) { used.add(JSON.parse(`"${m[1]}"`)); used.add(JSON.parse(`"${m[2]}"`)); }
  }
  expect(used.size).toBeGreaterThan(50);
  const { de } = await import("../src/admin/i18n/de");
  const missing = [...used].filter((k) => !(k in de));
  const unused = Object.keys(de).filter((k) => !used.has(k));
  expect({ missing, unused }).toEqual({ missing: [], unused: [] });
  // Every placeholder of the English text is kept by the German one ({Name} may stand for {name}).
  for (const k of used) {
    const want = new Set([...k.matchAll(/\{(\w+)\}/g)].map((m) => m[1].toLowerCase()));
    const got = new Set([...(de[k] ?? "").matchAll(/\{(\w+)\}/g)].map((m) => m[1].toLowerCase()));
    expect({ k, got: [...got].sort() }).toEqual({ k, got: [...want].sort() });
  }
});

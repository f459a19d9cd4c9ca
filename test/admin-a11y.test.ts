/**
 * Accessibility of the admin's forms, users and roles (issue 33, defect 9), in chromium: axe-core
 * finds nothing on a form with every field type (new, filled in, read-only), on the users and roles
 * screens, sign-in and start; each field's label names a real control; the html toolbar's buttons
 * hold their visible text in their names; latitude and longitude have ids and labels; the language
 * tabs follow the WAI-ARIA tabs pattern.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import sharp from "sharp";
import type { Server } from "bun";
import { adminSite } from "./helpers/site";
import { signedInPage, until } from "./helpers/page-wait";
import { expectNoAxeViolations } from "./helpers/axe";

/** Every field type the admin edits, single and `multi`, and translated into two languages. */
const specimens = {
  name: { singular: "Specimen", plural: "Specimens" },
  languages: ["en", "de"],
  fields: {
    title: { type: "text", required: true },
    summary: { type: "textarea" },
    body: { type: "html", admin_col: false, buttons: "h2,h3,h4,bold,italic,underline,strikethrough,subscript,superscript,quote,pre,orderedlist,unorderedlist,anchor,removeFormat", media: true, media_sizes: "md-70" },
    slug: { type: "slug", source: "title" },
    published: { type: "boolean" },
    day: { type: "date" },
    email: { type: "email" },
    website: { type: "url" },
    secret: { type: "password" },
    cover: { type: "image" },
    attachment: { type: "file" },
    download: { type: "upload" },
    photos: { type: "gallery" },
    category: { type: "select", options: { a: "Alpha", b: "Beta" } },
    tags: { type: "select", multi: true, options: { x: "Ex", y: "Why" } },
    rating: { type: "number", min: 1, max: 5 },
    color: { type: "color" },
    lat: { type: "location-picker", longitude_field: "lng", name: "Place" },
    lng: { type: "number" },
    sections: { type: "group", fields: { heading: { type: "text" }, n: { type: "number" }, on: { type: "boolean" }, when: { type: "date" }, words: { type: "text", i18n: true } } },
    // Translated.
    title_t: { type: "text", i18n: true, name: "Translated title" },
    summary_t: { type: "textarea", i18n: true, name: "Translated summary" },
    body_t: { type: "html", i18n: true, admin_col: false, buttons: "h2,bold,anchor", name: "Translated body" },
    slug_t: { type: "slug", source: "title_t", i18n: true, name: "Translated slug" },
    rating_t: { type: "number", i18n: true, name: "Translated rating" },
    flag_t: { type: "boolean", i18n: true, name: "Translated flag" },
    cover_t: { type: "image", i18n: true, name: "Translated cover" },
    // Lists of single values.
    names: { type: "text", multi: true },
    numbers: { type: "number", multi: true },
    links: { type: "url", multi: true },
    names_t: { type: "text", multi: true, i18n: true, name: "Translated names" },
  },
};

const tilePng = await sharp({ create: { width: 256, height: 256, channels: 3, background: "#ddd" } }).png().toBuffer();
const tileServer: Server<undefined> = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: () => new Response(new Uint8Array(tilePng), { headers: { "content-type": "image/png" } }),
});

let s: Awaited<ReturnType<typeof adminSite>>;
let browser: Browser;
/** One signed-in session for the pages of every test (signing in costs a password hash each time). */
let session: BrowserContext;
let filled = "";
let editorRole = "";
let editor = "";

async function upload(bytes: Uint8Array, name: string, type: string): Promise<string> {
  const fd = new FormData();
  fd.append("file", new Blob([bytes], { type }), name);
  const res = await fetch(`${s.base}/api/v1/.files`, { method: "POST", body: fd, headers: { authorization: `Bearer ${s.token}` } });
  return Object.keys(((await res.json()) as { files: Record<string, unknown> }).files)[0];
}

beforeAll(async () => {
  s = await adminSite({
    defs: { specimens },
    // An AI provider that is never asked: it makes the i18n fields show Translate.
    files: { ".env": "AI_API_KEY=test-key\nAI_BASE_URL=http://127.0.0.1:9/v1\nAI_MODEL=fake\n" },
    env: { AI_API_KEY: "", AI_BASE_URL: "", AI_MODEL: "", RESD_MAP_TILES: `http://127.0.0.1:${tileServer.port}/tiles/{z}/{x}/{y}.png` },
  });
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  const red = await sharp({ create: { width: 40, height: 30, channels: 3, background: "#c33" } }).png().toBuffer();
  const blue = await sharp({ create: { width: 30, height: 40, channels: 3, background: "#33c" } }).png().toBuffer();
  const img1 = await upload(red, "red.png", "image/png");
  const img2 = await upload(blue, "blue.png", "image/png");
  const txt = await upload(new TextEncoder().encode("some notes"), "notes.txt", "text/plain");
  const record = await s.apiJson("POST", "/api/v1/specimens", {
    title: "Filled in", summary: "Two\nlines", body: "<h2>Head</h2><p><b>Bold</b> and <a href=\"https://example.com/\">a link</a></p><blockquote><p>Quoted</p></blockquote><ul><li>one</li></ul>",
    published: true, day: "2026-11-24", email: "a@example.com", website: "https://example.com/x", secret: "s3cret-value",
    cover: img1, attachment: txt, download: txt, photos: [img1, img2], category: "b", tags: ["x", "y"], rating: 4, color: "#336699",
    lat: 52.52, lng: 13.405, sections: [{ heading: "One", n: 1, on: true, when: "2026-01-01", words: { en: "a", de: "b" } }, { heading: "Two", n: 2, on: false }],
    title_t: { en: "Hello", de: "Hallo" }, summary_t: { en: "Text", de: "Text" }, body_t: { en: "<p>Body</p>", de: "<p>Rumpf</p>" },
    slug_t: { en: "hello", de: "hallo" }, rating_t: { en: 1, de: 2 }, flag_t: { en: true, de: false }, cover_t: { en: img2, de: img1 },
    names: ["a", "b"], numbers: [1, 2], links: ["https://example.com/1"], names_t: { en: ["x"], de: ["y", "z"] },
  });
  if (record.status !== 201) throw new Error(`create: ${JSON.stringify(record.body)}`);
  filled = Object.keys(record.body!.specimens)[0];
  const role = await s.apiJson("POST", "/api/v1/roles", { name: "editor", permissions: ["view-specimens", "edit-specimens", "view-.files", "something-custom"] });
  editorRole = Object.keys(role.body!.roles)[0];
  const user = await s.apiJson("POST", "/api/v1/users", { email: "editor@example.com", name: "Ed", password: "editor-password-1", role: editorRole });
  editor = Object.keys(user.body!.users)[0];
  const first = await signedInPage(browser, s.base, "/admin");
  session = await browser.newContext({ storageState: await first.context().storageState(), viewport: { width: 1280, height: 800 } });
  await first.close();
}, 90_000);
afterAll(async () => {
  await browser?.close();
  await s?.cleanup();
  tileServer.stop(true);
});

async function signedIn(path: string): Promise<Page> {
  const page = await session.newPage();
  page.on("pageerror", (e) => console.error("pageerror:", e.message));
  await page.goto(`${s.base}${path}`);
  return page;
}

/** A record form once drawn: its html editors made, its media chips named, the map's tiles in. */
async function openForm(path: string): Promise<Page> {
  const page = await signedIn(path);
  await page.locator("form.fields").waitFor();
  await until(page, "!document.querySelector('form.fields').textContent.includes('Loading editor') && document.querySelectorAll('.html-editor').length === document.querySelectorAll('[data-html-field]').length");
  await until(page, "[...document.querySelectorAll('.file-chip a')].every((a) => !/^[0-9a-f]{32}$/.test(a.textContent))");
  await until(page, "[...document.querySelectorAll('.tilemap img')].every((i) => i.complete)");
  return page;
}

/** Shows every translated field's other language (axe looks at what is shown only). */
async function showLanguage(page: Page, l: string) {
  for (const t of await page.locator(`[role=tab][data-tab="${l}"], [role=tab]:text-is("${l}")`).all()) await t.click();
}

/** The value of a script run in the page (the tests' tsconfig knows no DOM: scripts are text). */
const inPage = <T>(page: Page, script: string) => page.evaluate(script) as Promise<T>;

const axeSource = await Bun.file(require.resolve("axe-core/axe.min.js")).text();

/**
 * Accessible names as axe computes them, of the shown elements matching `selector`, with the field
 * each sits in (nearest `[data-field]`) and that field's label.
 */
async function accessibleNames(page: Page, selector: string) {
  if (!(await page.evaluate("typeof window.axe === 'object'"))) await page.evaluate(axeSource);
  return inPage<{ id: string; tag: string; name: string; field: string; label: string; visible: string }[]>(page, `(() => {
    axe.setup(document);
    try {
      return [...document.querySelectorAll(${JSON.stringify(selector)})].filter((e) => e.offsetParent !== null).map((e) => {
        const wrap = e.closest("[data-field]");
        const label = wrap?.querySelector(":scope > label");
        return {
          id: e.id, tag: e.tagName.toLowerCase(), name: axe.commons.text.accessibleText(e).trim(), field: wrap?.getAttribute("data-field") ?? "",
          label: (label?.textContent ?? "").replace(/\\s*\\*$/, "").trim(), visible: e.innerText?.trim() ?? "",
        };
      });
    } finally {
      axe.teardown();
    }
  })()`);
}

describe("9. axe finds nothing", () => {
  test("a new record with every field type, each language shown", async () => {
    const page = await openForm("/admin/specimens/new");
    await expectNoAxeViolations(page, "a new record (en)");
    await showLanguage(page, "de");
    await expectNoAxeViolations(page, "a new record (de)");
    await page.close();
  });

  test("a filled-in record with every field type, each language shown, and a selection's toolbar", async () => {
    const page = await openForm(`/admin/specimens/${filled}`);
    await expectNoAxeViolations(page, "a filled-in record (en)");
    await showLanguage(page, "de");
    await expectNoAxeViolations(page, "a filled-in record (de)");
    await page.locator('[data-html-field="body"] .html-editor h2').dblclick();
    await page.locator('[data-html-field="body"] .bubble').waitFor();
    await expectNoAxeViolations(page, "a filled-in record with the bubble toolbar");
    await page.close();
  });

  test("the read-only view of a record", async () => {
    const page = await openForm(`/admin/specimens/${filled}?view=1`);
    await expectNoAxeViolations(page, "a record's read-only view (en)");
    await showLanguage(page, "de");
    await expectNoAxeViolations(page, "a record's read-only view (de)");
    await page.close();
  });

  for (const [what, path, ready] of [
    ["the users overview", () => "/admin/users", "main.overview[aria-busy=false] tbody tr[data-uuid]"],
    ["a user's form", () => `/admin/users/${editor}`, "form.fields [data-field=role]"],
    ["a new user", () => "/admin/users/new", "form.fields [data-field=role]"],
    ["the roles overview", () => "/admin/roles", "main.overview[aria-busy=false] tbody tr[data-uuid]"],
    ["a role's form", () => `/admin/roles/${editorRole}`, "form.fields .permissions"],
    ["a role's read-only view", () => `/admin/roles/${editorRole}?view=1`, "form.fields .permissions"],
    ["a new role", () => "/admin/roles/new", "form.fields .permissions"],
    ["the start page", () => "/admin", "main.page ul.cards li"],
  ] as const) {
    test(what, async () => {
      const page = await signedIn(path());
      await page.locator(ready).first().waitFor();
      await expectNoAxeViolations(page, what);
      await page.close();
    });
  }

  test("sign-in, also with its error", async () => {
    const page = await browser.newPage();
    await page.goto(`${s.base}/admin/sign-in`);
    await page.getByLabel("E-mail").waitFor();
    await expectNoAxeViolations(page, "sign-in");
    await page.getByLabel("E-mail").fill("admin@example.com");
    await page.getByLabel("Password").fill("wrong-password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").waitFor();
    await expectNoAxeViolations(page, "sign-in with an error");
    await page.close();
  });
});

describe("9. every field's label names a real control", () => {
  test("a field's label points at its control, or at its group named by the same words", async () => {
    const page = await openForm(`/admin/specimens/${filled}`);
    const labels = await inPage<{ field: string; text: string; found: boolean; control: boolean; role: string; named: string }[]>(page, `
      [...document.querySelectorAll("form.fields [data-field] > label[for]")].map((l) => {
        const target = document.getElementById(l.htmlFor);
        return {
          field: l.parentElement.getAttribute("data-field"), text: l.textContent.replace(/\\s*\\*$/, "").trim(), found: Boolean(target),
          control: target !== null && l.control === target, role: target?.getAttribute("role") ?? "", named: target?.getAttribute("aria-label") ?? "",
        };
      })`);
    // Every top-level field but the longitude (edited with its latitude) and the group's rows' fields.
    expect(labels.length).toBeGreaterThanOrEqual(Object.keys(specimens.fields).length - 1);
    for (const l of labels) {
      expect({ field: l.field, found: l.found }).toEqual({ field: l.field, found: true });
      if (!l.control) expect({ field: l.field, role: l.role, named: l.named }).toEqual({ field: l.field, role: expect.stringMatching(/^(group|textbox)$/), named: l.text });
    }
    await page.close();
  });

  test("every control of the form has a name holding its field's label: each language's, each list entry's", async () => {
    const page = await openForm(`/admin/specimens/${filled}`);
    for (const l of ["en", "de"]) {
      await showLanguage(page, l);
      const controls = await accessibleNames(page, "form.fields input:not([type=hidden]):not(.sr-only), form.fields select, form.fields textarea, form.fields [role=textbox], form.fields [role=group]");
      expect(controls.length).toBeGreaterThan(40);
      for (const c of controls) {
        const where = { field: c.field, id: c.id, tag: c.tag };
        expect({ ...where, named: c.name !== "" }).toEqual({ ...where, named: true });
        // Latitude and longitude are named for themselves, inside their field's group.
        if (c.field && !/-(latitude|longitude)$/.test(c.id)) expect({ ...where, name: c.name.toLowerCase() }).toEqual({ ...where, name: expect.stringContaining(c.label.toLowerCase()) });
      }
      const byId = Object.fromEntries(controls.map((c) => [c.id, c.name]));
      expect(byId[`field-title_t-${l}`]).toBe(`Translated title (${l})`);
      expect(byId[`field-body_t-${l}`]).toBe(`Translated body (${l})`);
      expect(byId["field-names-1"]).toBe("Names 2");
      if (l === "de") expect(byId["field-names_t-de-1"]).toBe("Translated names (de) 2");
    }
    await page.close();
  });

  test("latitude and longitude have ids and labels", async () => {
    const page = await openForm("/admin/specimens/new");
    const place = page.locator('form.fields > [data-field="lat"]');
    expect(await place.getByRole("group", { name: "Place" }).count()).toBe(1);
    const lat = place.getByLabel("Latitude", { exact: true });
    const lng = place.getByLabel("Longitude", { exact: true });
    expect(await lat.getAttribute("id")).toBe("field-lat-latitude");
    expect(await lng.getAttribute("id")).toBe("field-lat-longitude");
    expect(await page.locator('label[for="field-lat-latitude"]').textContent()).toContain("Latitude");
    expect(await page.locator('label[for="field-lat-longitude"]').textContent()).toContain("Longitude");
    // The map's pin is a bundled icon, not an emoji.
    await lat.fill("52.5");
    await lng.fill("13.4");
    await place.locator(".tilemap .pin svg.icon-pin").waitFor();
    expect(await place.locator(".tilemap .pin").textContent()).toBe("");
    await page.close();
  });
});

describe("9. the html toolbar's buttons hold their visible text in their names", () => {
  test("every button of the toolbars, the selection's too; link and quote are icons", async () => {
    const page = await openForm(`/admin/specimens/${filled}`);
    await page.locator('[data-html-field="body"] .html-editor h2').dblclick();
    await page.locator('[data-html-field="body"] .bubble').waitFor();
    const buttons = await accessibleNames(page, "[role=toolbar] button");
    expect(buttons.length).toBeGreaterThanOrEqual(15 + 1 + 3 + 3);
    for (const b of buttons) {
      // Text with letters or digits is words a speech user says (a lone sign such as • is not).
      if (/[\p{L}\p{N}]/u.test(b.visible)) expect({ visible: b.visible, name: b.name.toLowerCase() }).toEqual({ visible: b.visible, name: expect.stringContaining(b.visible.toLowerCase()) });
      expect(b.visible).not.toMatch(/\p{Extended_Pictographic}/u);
    }
    const body = page.locator('[data-html-field="body"] .toolbar-row');
    expect(await body.locator('[data-button="h2"]').getAttribute("aria-label")).toBe("H2 Heading 2 (Body)");
    expect(await body.locator('[data-button="subscript"]').getAttribute("aria-label")).toBe("x₂ Subscript (Body)");
    expect(await body.locator('[data-button="bold"]').getAttribute("aria-label")).toBe("Bold (Body)");
    for (const b of ["quote", "anchor"]) expect(await body.locator(`[data-button="${b}"] svg.icon`).count()).toBe(1);
    await page.close();
  });
});

describe("9. the language tabs follow the WAI-ARIA tabs pattern", () => {
  /** The tabs as `language:aria-selected:tabindex`, the focused tab's language (or element's id), the shown panels. */
  const tabState = (page: Page, field: string) =>
    inPage<{ tabs: string; focused: string; shown: string }>(page, `(() => {
      const group = document.querySelector('form.fields > [data-field="${field}"]');
      return {
        tabs: [...group.querySelectorAll("[role=tab]")].map((t) => t.textContent + ":" + t.getAttribute("aria-selected") + ":" + t.getAttribute("tabindex")).join(" "),
        focused: document.activeElement?.getAttribute("role") === "tab" ? document.activeElement.textContent : document.activeElement?.id,
        shown: [...group.querySelectorAll("[role=tabpanel]")].filter((p) => !p.hidden).map((p) => p.getAttribute("data-language")).join(),
      };
    })()`);

  test("arrow keys, Home and End move and select; only the selected tab is in the tab order", async () => {
    const page = await openForm("/admin/specimens/new");
    const field = page.locator('form.fields > [data-field="title_t"]');
    expect(await tabState(page, "title_t")).toMatchObject({ tabs: "en:true:0 de:false:-1", shown: "en" });
    await field.getByRole("tab", { name: "en" }).focus();
    await page.keyboard.press("ArrowRight");
    expect(await tabState(page, "title_t")).toEqual({ tabs: "en:false:-1 de:true:0", focused: "de", shown: "de" });
    await page.keyboard.press("ArrowRight");
    expect(await tabState(page, "title_t")).toEqual({ tabs: "en:true:0 de:false:-1", focused: "en", shown: "en" });
    await page.keyboard.press("ArrowLeft");
    expect(await tabState(page, "title_t")).toEqual({ tabs: "en:false:-1 de:true:0", focused: "de", shown: "de" });
    await page.keyboard.press("Home");
    expect(await tabState(page, "title_t")).toEqual({ tabs: "en:true:0 de:false:-1", focused: "en", shown: "en" });
    await page.keyboard.press("End");
    expect(await tabState(page, "title_t")).toEqual({ tabs: "en:false:-1 de:true:0", focused: "de", shown: "de" });
    // Tab leaves the tabs (for Translate, then the selected language's editor); Shift+Tab comes back to the selected tab.
    await page.keyboard.press("Tab");
    expect(await page.evaluate("document.activeElement.textContent")).toBe("Translate from de");
    await page.keyboard.press("Tab");
    expect((await tabState(page, "title_t")).focused).toBe("field-title_t-de");
    await page.keyboard.press("Shift+Tab");
    await page.keyboard.press("Shift+Tab");
    expect((await tabState(page, "title_t")).focused).toBe("de");
    await page.close();
  });

  test("the tablist holds only tabs, each tab controls its panel and the panel is labelled by it", async () => {
    const page = await openForm("/admin/specimens/new");
    const field = page.locator('form.fields > [data-field="title_t"]');
    await field.getByRole("button", { name: "Translate from en" }).waitFor();
    const shape = await inPage<unknown>(page, `(() => {
      const group = document.querySelector('form.fields > [data-field="title_t"]');
      const list = group.querySelector("[role=tablist]");
      return {
        listNamed: list.getAttribute("aria-label"),
        children: [...list.children].map((c) => c.getAttribute("role")),
        panels: [...group.querySelectorAll("[role=tab]")].map((t) => {
          const panel = document.getElementById(t.getAttribute("aria-controls"));
          return { role: panel?.getAttribute("role"), labelledBy: Boolean(panel) && document.getElementById(panel.getAttribute("aria-labelledby")) === t };
        }),
      };
    })()`);
    expect(shape).toEqual({ listNamed: "Translated title: languages", children: ["tab", "tab"], panels: [{ role: "tabpanel", labelledBy: true }, { role: "tabpanel", labelledBy: true }] });
    expect(await field.getByRole("tabpanel", { name: "en" }).count()).toBe(1);
    await page.close();
  });
});

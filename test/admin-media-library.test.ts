/**
 * The media library in chromium (issue 33, defect 7): finished uploads leave, failed ones stay;
 * title and alt text fit their cells on a phone; icons are bundled SVG, not emoji; media sizes by
 * name; alt text per file, used by the editor's images and the thumbnails; sort and type filter
 * kept in the URL; axe-core on the page and the picker. The site starts as one made before alt
 * text existed (a file without `alt`, an older schema), so the library is seen opening on such a
 * site. Writes docs/admin-media-desktop.png and docs/admin-media-phone.png.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chromium, type Browser, type Page } from "playwright-core";
import { Database } from "bun:sqlite";
import sharp from "sharp";
import { join } from "node:path";
import { adminSite, ROOT, serve, type Server } from "./helpers/site";
import { upload } from "./helpers/media";
import { sessionPage, until } from "./helpers/page-wait";
import { expectNoAxeViolations } from "./helpers/axe";

const articles = {
  name: { singular: "Article", plural: "Articles" },
  fields: {
    title: { type: "text", required: true },
    body: { type: "html", buttons: "bold,anchor", media: true, media_sizes: "sm-50,md-70,xl-100,hero-100", admin_col: false },
    attachment: { type: "upload", admin_col: false },
  },
};
const env = { RESD_MAX_UPLOAD: "1000000" };

let s: Awaited<ReturnType<typeof adminSite>>;
let server: Server;
let browser: Browser;
const md5 = (b: Uint8Array | string) => new Bun.CryptoHasher("md5").update(b).digest("hex");

const red = await sharp({ create: { width: 60, height: 40, channels: 3, background: "#c33" } }).png().toBuffer();
const blue = await sharp({ create: { width: 120, height: 90, channels: 3, background: "#33c" } }).png().toBuffer();
const pdf = new TextEncoder().encode("%PDF-1.4\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n");
const txt = new TextEncoder().encode("Meeting notes, a plain text file.");
const mp3 = new Uint8Array([0x49, 0x44, 0x33, 0x03, 0, 0, 0, 0, 0, 0x0a, ...new Array(64).fill(0)]);
const zip = new Uint8Array([0x50, 0x4b, 0x05, 0x06, ...new Array(18).fill(0)]);
const ids = { red: md5(red), blue: md5(blue), pdf: md5(pdf), txt: md5(txt), mp3: md5(mp3), zip: md5(zip) };

/** The API as the admin, against the restarted server. */
const api = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(server.base + path, {
    method, headers: { authorization: `Bearer ${s.token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
};

beforeAll(async () => {
  s = await adminSite({ defs: { articles }, env, store: "sqlite" });
  // Upload order is not name order nor size order, so that each sort shows.
  await upload(s, red, "b-red.png", "image/png");
  await upload(s, zip, "f-archive.zip", "application/zip");
  await upload(s, pdf, "c-report.pdf", "application/pdf");
  await upload(s, blue, "a-blue.png", "image/png");
  await upload(s, mp3, "e-song.mp3", "audio/mpeg");
  await upload(s, txt, "d-notes.txt", "text/plain");
  // The site as it was before alt text: the blue image's record has no `alt` and .files_meta an
  // older definition. The server is stopped meanwhile, so no cache of it outlives the change.
  await s.stop();
  const db = new Database(join(s.dir, "data/resd.db"));
  db.run(`UPDATE "r:.files_meta" SET data = json_remove(data, '$.alt') WHERE uuid = ?`, [ids.blue]);
  db.run("UPDATE _resd_schema SET hash = 'before-alt' WHERE resource = '.files_meta'");
  db.close();
  server = await serve(s.dir, { env });
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await s?.cleanup();
});

const signedIn = (path: string, viewport?: { width: number; height: number }) => sessionPage(browser, server.base, path, viewport);
const card = (page: Page, uuid: string) => page.locator(`li[data-file="${uuid}"]`);
/** The images in the window have loaded (lazy ones below it never start). */
const inViewLoaded = (within: string) =>
  `[...document.querySelectorAll(${JSON.stringify(`${within} img`)})].filter((i) => i.getBoundingClientRect().top < innerHeight).every((i) => i.complete && i.naturalWidth > 0)`;
const shownNames = (page: Page) => page.locator("ul.library li[data-file] .file-name").allTextContents();

describe("media library (issue 33, defect 7)", () => {
  test("an existing site's library opens: the file uploaded before alt text is listed, its alt empty", async () => {
    const page = await signedIn("/admin/files");
    await card(page, ids.blue).waitFor();
    expect(await page.locator("ul.library li[data-file]").count()).toBe(6);
    expect(await card(page, ids.blue).getByLabel("Alt text").inputValue()).toBe("");
    await page.close();
  });

  test("finished uploads' rows go away; a failed one stays with its message", async () => {
    const page = await signedIn("/admin/files");
    const ok = Buffer.from("an upload that finishes");
    await page.locator("[data-dropzone] input[type=file]").setInputFiles([
      { name: "fine.txt", mimeType: "text/plain", buffer: ok },
      { name: "huge.bin", mimeType: "application/octet-stream", buffer: Buffer.alloc(1_500_000, 1) },
    ]);
    await card(page, md5(ok)).waitFor();
    await page.locator('[data-upload="huge.bin"] .error').waitFor();
    await until(page, `!document.querySelector('[data-upload="fine.txt"]')`, 10_000);
    expect(await page.locator("[data-upload] progress").count()).toBe(0);
    expect(await page.locator('[data-upload="huge.bin"] .error').textContent()).toContain("huge.bin is larger than the server accepts");
    // The failed row is dismissed by hand.
    await page.locator('[data-upload="huge.bin"]').getByRole("button", { name: "Dismiss" }).click();
    expect(await page.locator("[data-upload]").count()).toBe(0);
    expect((await api("DELETE", `/api/v1/.files/${md5(ok)}`)).status).toBe(200);
    await page.close();
  });

  test("icons are bundled SVG: no emoji in the library, the picker or a file chip", async () => {
    const pictographs = "/\\p{Extended_Pictographic}/u";
    const page = await signedIn("/admin/files");
    await card(page, ids.pdf).waitFor();
    expect(await card(page, ids.pdf).locator("svg.icon").count()).toBe(1);
    expect(await card(page, ids.mp3).locator("svg.icon").count()).toBe(1);
    expect(await page.evaluate(`${pictographs}.test(document.querySelector("main").innerText)`)).toBe(false);
    // A record whose upload field holds the PDF shows it as a chip with an SVG icon.
    const created = await api("POST", "/api/v1/articles", { title: "With a file", attachment: ids.pdf });
    const uuid = Object.keys(created.body.articles)[0];
    await page.goto(`${server.base}/admin/articles/${uuid}`);
    const chip = page.locator(`.file-chip[data-file="${ids.pdf}"]`);
    await chip.locator("a").filter({ hasText: "c-report.pdf" }).waitFor();
    expect(await chip.locator("svg.icon").count()).toBe(1);
    // The editor's link button and the picker's files.
    const body = page.locator('[data-html-field="body"]');
    await body.locator('[data-button="anchor"]').waitFor();
    expect(await body.locator('[data-button="anchor"] svg.icon').count()).toBe(1);
    expect(await page.evaluate(`${pictographs}.test(document.querySelector('[data-html-field="body"]').innerText)`)).toBe(false);
    await body.locator('[data-button="media"]').click();
    await page.locator(`dialog[open] [data-file="${ids.red}"]`).waitFor();
    expect(await page.evaluate(`${pictographs}.test(document.querySelector("dialog[open]").innerText)`)).toBe(false);
    await page.close();
  });

  test("media sizes are shown by name (Small, 50 %), the raw value stays the option's value", async () => {
    const page = await signedIn("/admin/articles/new");
    await page.locator('[data-html-field="body"] [data-button="media"]').click();
    const size = page.locator("dialog[open]").getByLabel("Size");
    await size.waitFor();
    expect(await size.locator("option").allTextContents()).toEqual(["Small, 50 %", "Medium, 70 %", "Extra large, 100 %", "Hero, 100 %"]);
    expect(await size.locator("option").evaluateAll((os) => os.map((o) => (o as unknown as { value: string }).value))).toEqual(["sm-50", "md-70", "xl-100", "hero-100"]);
    await page.close();
  });

  test("alt text is edited per file, kept by the API, and used by thumbnails and the editor's images", async () => {
    const page = await signedIn("/admin/files");
    const alt = card(page, ids.red).getByLabel("Alt text");
    await alt.fill("A red rectangle on white");
    await alt.press("Tab");
    await until(page, `fetch("/api/v1/.files/${ids.red}").then((r) => r.json()).then((b) => b.files["${ids.red}"].alt === "A red rectangle on white")`);
    await until(page, `document.querySelector('li[data-file="${ids.red}"] img')?.alt === "A red rectangle on white"`);
    // The old file takes alt text too.
    await card(page, ids.blue).getByLabel("Alt text").fill("Blue");
    await card(page, ids.blue).getByLabel("Alt text").press("Tab");
    await until(page, `fetch("/api/v1/.files/${ids.blue}").then((r) => r.json()).then((b) => b.files["${ids.blue}"].alt === "Blue")`);
    // Inserted into the html editor from the picker: the image's alt is the file's alt text.
    await page.goto(`${server.base}/admin/articles/new`);
    await page.locator('[data-html-field="body"] [data-button="media"]').click();
    const pick = page.locator(`dialog[open] button[data-file="${ids.red}"]`);
    expect(await pick.locator("img").getAttribute("alt")).toBe("A red rectangle on white");
    await page.locator("dialog[open]").getByLabel("Size").selectOption("md-70");
    await pick.click();
    const html = (await page.evaluate(`document.querySelector('[data-html-field="body"] .html-editor').editor.getHTML()`)) as string;
    expect(html).toContain(`src="/img/${ids.red}/1280w"`);
    expect(html).toContain('alt="A red rectangle on white"');
    expect(html).toContain('class="md-70"');
    await page.close();
  });

  test("sort and filter by type go through the .files list API and stay in the URL", async () => {
    const page = await signedIn("/admin/files");
    await card(page, ids.txt).waitFor();
    // Newest first by default.
    expect((await shownNames(page))[0]).toBe("d-notes.txt");
    const byName = page.waitForRequest((r) => r.url().includes("/api/v1/.files?") && new URL(r.url()).searchParams.get("sort") === "name|text|asc");
    await page.getByLabel("Sort").selectOption("name");
    await byName;
    await until(page, `document.querySelector("ul.library li[data-file] .file-name")?.textContent === "a-blue.png"`);
    expect(await shownNames(page)).toEqual(["a-blue.png", "b-red.png", "c-report.pdf", "d-notes.txt", "e-song.mp3", "f-archive.zip"]);
    expect(new URL(page.url()).searchParams.get("sort")).toBe("name");
    await page.getByLabel("Type").selectOption("document");
    await until(page, `document.querySelectorAll("ul.library li[data-file]").length === 2`);
    expect(await shownNames(page)).toEqual(["c-report.pdf", "d-notes.txt"]);
    expect(new URL(page.url()).searchParams.get("kind")).toBe("document");
    // A reload keeps both.
    await page.reload();
    await card(page, ids.pdf).waitFor();
    expect(await page.getByLabel("Sort").inputValue()).toBe("name");
    expect(await page.getByLabel("Type").inputValue()).toBe("document");
    expect(await shownNames(page)).toEqual(["c-report.pdf", "d-notes.txt"]);
    for (const [kind, names] of [["image", ["a-blue.png", "b-red.png"]], ["media", ["e-song.mp3"]], ["other", ["f-archive.zip"]]] as const) {
      await page.getByLabel("Type").selectOption(kind);
      await until(page, `[...document.querySelectorAll("ul.library li[data-file] .file-name")].map((e) => e.textContent).join() === ${JSON.stringify(names.join())}`);
    }
    await page.getByLabel("Type").selectOption("");
    await page.getByLabel("Sort").selectOption("size");
    // The largest first is also first by name: wait for the whole list in size order, not its head.
    const sizes = (await api("GET", "/api/v1/.files?sort=size|desc")).body.files as Record<string, { name: string }>;
    const bySize = Object.values(sizes).map((f) => f.name);
    expect(bySize).not.toEqual([...bySize].sort());
    await until(page, `JSON.stringify([...document.querySelectorAll("ul.library li[data-file] .file-name")].map(e => e.textContent)) === ${JSON.stringify(JSON.stringify(bySize))}`);
    expect(await shownNames(page)).toEqual(bySize);
    expect(new URL(page.url()).searchParams.has("kind")).toBe(false);
    await page.close();
  });

  test("on a phone (390 px) title and alt inputs fit their cells and nothing scrolls sideways", async () => {
    const page = await signedIn("/admin/files", { width: 390, height: 844 });
    await card(page, ids.red).waitFor();
    await until(page, inViewLoaded("ul.library"));
    expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
    const outside = await page.evaluate(`[...document.querySelectorAll("ul.library li[data-file]")].flatMap((li) => {
      const box = li.getBoundingClientRect();
      return [...li.querySelectorAll("input, select, button, a")].filter((el) => {
        const r = el.getBoundingClientRect();
        return r.left < box.left - 0.5 || r.right > box.right + 0.5;
      }).map((el) => li.dataset.file + " " + (el.getAttribute("aria-label") || el.textContent || el.tagName));
    })`);
    expect(outside).toEqual([]);
    await page.screenshot({ path: join(ROOT, "docs/admin-media-phone.png") });
    await expectNoAxeViolations(page, "the media library at 390 px");
    await page.close();
  });

  test("axe finds nothing on the library page or in the media picker; desktop screenshot", async () => {
    const page = await signedIn("/admin/files");
    await card(page, ids.red).waitFor();
    await until(page, inViewLoaded("ul.library"));
    await page.screenshot({ path: join(ROOT, "docs/admin-media-desktop.png") });
    await expectNoAxeViolations(page, "the media library");
    await card(page, ids.red).getByRole("button", { name: "Used where" }).click();
    await page.locator("dialog[open] p.muted").waitFor();
    await expectNoAxeViolations(page, "the media library's Used where dialog");
    await page.goto(`${server.base}/admin/articles/new`);
    await page.locator('[data-html-field="body"] [data-button="media"]').click();
    await page.locator(`dialog[open] button[data-file="${ids.red}"]`).waitFor();
    await until(page, inViewLoaded("dialog[open]"));
    await expectNoAxeViolations(page, "the media picker");
    await page.close();
  });
});

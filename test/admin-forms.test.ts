/**
 * The admin forms in Debian's chromium against the real server: every field type through the page
 * and back over the API, 422 errors at their fields, slugs, i18n tabs and translation through a
 * fake provider, group rows, every html button's output surviving a save, custom buttons of each
 * kind, plain-text paste, media from the library and `.files-usage`.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chromium, type Browser, type Page } from "playwright-core";
import sharp from "sharp";
import type { Server } from "bun";
import { adminSite } from "./helpers/site";
import { docx } from "./helpers/docx";
import { sessionPage, until } from "./helpers/page-wait";

const articles = {
  name: { singular: "Article", plural: "Articles" },
  languages: ["en", "de"],
  ai_prompts: { title: "Keep it short." },
  buttons: {
    note: { kind: "block", tag: "aside", label: "Note" },
    mark: { kind: "wrap", tag: "span", class: "highlight", label: "Highlight", bubble: true, active: "span.highlight" },
    rule: { kind: "insert", html: "<hr>", insert: true, label: "Rule" },
    ping: { kind: "event", event: "resd-ping", label: "Ping" },
    strong2: { kind: "command", command: "bold", label: "Strong" },
    bullets: { kind: "list", label: "Bullets" },
    weblink: { kind: "link", label: "Web link" },
  },
  fields: {
    title: { type: "text", required: true, i18n: true },
    slug: { type: "slug", source: "title", i18n: true },
    summary: { type: "textarea" },
    body: { type: "html", admin_col: false, buttons: "h2,h3,h4,bold,italic,orderedlist,unorderedlist,quote,anchor,pre,removeFormat,strikethrough,subscript,superscript,underline,note,mark,rule,ping,strong2,bullets,weblink", media: true, media_sizes: "sm-90,md-70,lg-60,xl-50,xxl-40" },
    simple: { type: "html", buttons: "bold,italic", admin_col: false },
    published: { type: "boolean" },
    day: { type: "date" },
    email: { type: "email" },
    website: { type: "url" },
    secret: { type: "password" },
    cover: { type: "image" },
    attachment: { type: "file", accept: ".txt,text/plain" },
    download: { type: "upload" },
    photos: { type: "gallery" },
    category: { type: "select", options: { a: "Alpha", b: "Beta" } },
    rating: { type: "number", min: 1, max: 5 },
    color: { type: "color" },
    lat: { type: "location-picker", longitude_field: "lng" },
    lng: { type: "number" },
    sections: { type: "group", fields: { heading: { type: "text", required: true }, n: { type: "number", max: 10 } } },
    internal: { type: "text", wrapper_class: "hidden" },
  },
};
const pages = { fields: { title: { type: "text", required: true }, slug: { type: "slug", source: "title", preserve_existing: true } } };

/** A fake OpenAI-compatible provider: translations are the text with the language prefixed. */
function fakeProvider() {
  const seen: { system: string; user: string }[] = [];
  const server: Server<undefined> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const body = (await req.json()) as { messages: { role: string; content: string }[] };
      const system = body.messages.find((m) => m.role === "system")?.content ?? "";
      const user = body.messages.find((m) => m.role === "user")?.content ?? "";
      seen.push({ system, user });
      if (system.includes("fill in a new record")) {
        return Response.json({ choices: [{ message: { role: "assistant", content: JSON.stringify({ title: { en: "From the document", de: "Aus dem Dokument" }, summary: "First paragraph.", rating: 42 }) } }] });
      }
      const langs = /language codes: ([a-z, ]+);/.exec(system)?.[1].split(", ") ?? [];
      const text = user.split("\n\n").slice(1).join("\n\n");
      const content = JSON.stringify(Object.fromEntries(langs.map((l) => [l, `[${l}] ${text}`])));
      return Response.json({ choices: [{ message: { role: "assistant", content } }] });
    },
  });
  return { seen, server, base: `http://127.0.0.1:${server.port}/v1` };
}

const provider = fakeProvider();
/** A tile server on 127.0.0.1 (RESD_MAP_TILES): every tile is one grey PNG; requests are counted. */
const tileRequests: string[] = [];
const tilePng = await sharp({ create: { width: 256, height: 256, channels: 3, background: "#ddd" } }).png().toBuffer();
const tileServer: Server<undefined> = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch(req) {
    tileRequests.push(new URL(req.url).pathname);
    return new Response(new Uint8Array(tilePng), { headers: { "content-type": "image/png" } });
  },
});
let s: Awaited<ReturnType<typeof adminSite>>;
let browser: Browser;
let png1: Buffer;
let png2: Buffer;
beforeAll(async () => {
  s = await adminSite({
    defs: { articles, pages },
    files: { ".env": `AI_API_KEY=test-key\nAI_BASE_URL=${provider.base}\nAI_MODEL=fake\n` },
    env: { AI_API_KEY: "", AI_BASE_URL: "", AI_MODEL: "", RESD_MAX_UPLOAD: "2000000", RESD_MAP_TILES: `http://127.0.0.1:${tileServer.port}/tiles/{z}/{x}/{y}.png` },
  });
  png1 = await sharp({ create: { width: 40, height: 30, channels: 3, background: "#c33" } }).png().toBuffer();
  png2 = await sharp({ create: { width: 30, height: 40, channels: 3, background: "#33c" } }).png().toBuffer();
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await s?.cleanup();
  provider.server.stop(true);
  tileServer.stop(true);
});

const signedIn = (path: string) => sessionPage(browser, s.base, path, { width: 1200, height: 900 });

const field = (page: Page, name: string) => page.locator(`form.fields > [data-field="${name}"]`);
const editorOf = (page: Page, name: string) => page.locator(`[data-html-field="${name}"] .html-editor`);

/** Uploads through a media field's picker (the uploaded file is picked). */
async function pickUpload(page: Page, name: string, file: { name: string; mimeType: string; buffer: Buffer }, button = /Choose…|Add image…/) {
  await field(page, name).getByRole("button", { name: button }).click();
  await page.locator("dialog[open] input[type=file]").setInputFiles(file);
  await page.locator("dialog[open]").waitFor({ state: "detached" });
}

async function readBack(uuid: string) {
  return (await s.apiJson("GET", `/api/v1/articles/${uuid}`)).body!.articles[uuid];
}

describe("admin forms in chromium", () => {
  let uuid = "";

  test("create a record with every field type through the page and read it back over the API", async () => {
    const page = await signedIn("/admin/articles/new");
    await field(page, "title").waitFor();
    expect(await field(page, "internal").isVisible()).toBe(false); // wrapper_class hidden
    await field(page, "title").locator("[data-language=en] input").fill("Hello World");
    await field(page, "title").getByRole("tab", { name: "de" }).click();
    await field(page, "title").locator("[data-language=de] input").fill("Hallo Welt");
    // The slug follows its source, per language.
    await field(page, "slug").getByRole("tab", { name: "en" }).click();
    expect(await field(page, "slug").locator("[data-language=en] input").inputValue()).toBe("hello-world");
    await field(page, "slug").getByRole("tab", { name: "de" }).click();
    expect(await field(page, "slug").locator("[data-language=de] input").inputValue()).toBe("hallo-welt");
    await field(page, "summary").locator("textarea").fill("Two\nlines");
    await editorOf(page, "body").click();
    await page.keyboard.type("Body text");
    await editorOf(page, "simple").click();
    await page.keyboard.type("Simple text");
    await field(page, "published").locator("input").check();
    await field(page, "day").locator("input").fill("2026-11-24");
    await field(page, "email").locator("input").fill("a@example.com");
    await field(page, "website").locator("input").fill("https://example.com/x");
    await field(page, "secret").locator("input").fill("s3cret-value");
    await pickUpload(page, "cover", { name: "red.png", mimeType: "image/png", buffer: png1 });
    await pickUpload(page, "attachment", { name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("attached text") });
    await pickUpload(page, "download", { name: "data.bin", mimeType: "application/octet-stream", buffer: Buffer.from([1, 2, 3, 4]) });
    await pickUpload(page, "photos", { name: "red.png", mimeType: "image/png", buffer: png1 });
    await pickUpload(page, "photos", { name: "blue.png", mimeType: "image/png", buffer: png2 });
    await field(page, "category").locator("select").selectOption("b");
    await field(page, "rating").locator("input").fill("4");
    await field(page, "color").locator("input").fill("#336699");
    await field(page, "lat").getByLabel("Latitude").fill("52.52");
    await field(page, "lat").getByLabel("Longitude").fill("13.405");
    const sections = field(page, "sections");
    for (const h of ["one", "two", "three"]) {
      await sections.getByRole("button", { name: "Add row" }).click();
      await sections.locator(".group-row").last().locator("[data-field=heading] input").fill(h);
    }
    // Reorder: three up to the top, then one down to the end.
    await sections.getByRole("button", { name: "Move row 3 up" }).click();
    await sections.getByRole("button", { name: "Move row 2 up" }).click();
    await sections.getByRole("button", { name: "Move row 2 down" }).click();
    await page.getByRole("button", { name: "Save" }).click();
    await page.waitForURL(/\/admin\/articles\/[0-9a-f-]{36}$/);
    uuid = page.url().split("/").pop()!;

    const r = await readBack(uuid);
    expect(r.title).toEqual({ en: "Hello World", de: "Hallo Welt" });
    expect(r.slug).toEqual({ en: "hello-world", de: "hallo-welt" });
    expect(r.summary).toBe("Two\nlines");
    expect(r.body).toBe("<p>Body text</p>");
    expect(r.simple).toBe("<p>Simple text</p>");
    expect(r).toMatchObject({ published: true, day: "2026-11-24", email: "a@example.com", website: "https://example.com/x", category: "b", rating: 4, color: "#336699", lat: 52.52, lng: 13.405 });
    expect(r.secret).toBeUndefined(); // write-only
    const md5 = (b: Buffer) => new Bun.CryptoHasher("md5").update(b).digest("hex");
    expect(r.cover).toBe(md5(png1));
    expect(r.attachment).toBe(md5(Buffer.from("attached text")));
    expect(r.download).toBe(md5(Buffer.from([1, 2, 3, 4])));
    expect(r.photos).toEqual([md5(png1), md5(png2)]);
    expect(r.sections.map((x: { heading: string }) => x.heading)).toEqual(["three", "two", "one"]);
    await page.close();
  });

  test("required fields are checked before sending; the server's 422 errors appear at their fields", async () => {
    const page = await signedIn("/admin/articles/new");
    await field(page, "title").waitFor();
    let posted = 0;
    page.on("request", (r) => { if (r.method() === "POST" && r.url().endsWith("/api/v1/articles")) posted++; });
    await page.getByRole("button", { name: "Save" }).click();
    expect(await field(page, "title").locator(".field-error").textContent()).toBe("required");
    expect(posted).toBe(0);
    await field(page, "title").locator("[data-language=en] input").fill("Bad values");
    await field(page, "rating").locator("input").fill("9");
    await field(page, "sections").getByRole("button", { name: "Add row" }).click();
    await field(page, "sections").locator(".group-row [data-field=heading] input").fill("h");
    await field(page, "sections").locator(".group-row [data-field=n] input").fill("11");
    await page.getByRole("button", { name: "Save" }).click();
    await field(page, "rating").locator(".field-error").waitFor();
    expect(posted).toBe(1);
    expect(await field(page, "rating").locator(".field-error").textContent()).toContain("5");
    expect(await field(page, "sections").locator(".group-row [data-field=n] .error").textContent()).toContain("10");
    expect(page.url()).toEndWith("/admin/articles/new");
    await page.close();
  });

  test("a saved slug stays when preserve_existing; unsaved changes warn before leaving", async () => {
    const created = await s.apiJson("POST", "/api/v1/pages", { title: "Original", slug: "original" });
    const id = Object.keys(created.body!.pages)[0];
    const page = await signedIn(`/admin/pages/${id}`);
    await field(page, "title").locator("input").fill("Renamed page");
    expect(await field(page, "slug").locator("input").inputValue()).toBe("original");
    let asked = "";
    page.once("dialog", (d) => { asked = d.message(); void d.dismiss(); });
    await page.locator("a", { hasText: "← Pages" }).click();
    expect(asked).toContain("unsaved changes");
    expect(new URL(page.url()).pathname).toBe(`/admin/pages/${id}`);
    await page.close();
  });

  test("translate an i18n field through the provider (fake, on 127.0.0.1)", async () => {
    const page = await signedIn(`/admin/articles/${uuid}`);
    await field(page, "title").waitFor();
    await field(page, "title").getByRole("tab", { name: "en" }).click();
    await field(page, "title").getByRole("button", { name: "Translate from en" }).click();
    await field(page, "title").getByRole("tab", { name: "de" }).click();
    await until(page, `document.querySelector('[data-field="title"] [data-language="de"] input').value === "[de] Hello World"`);
    expect(provider.seen.at(-1)!.system).toContain("Keep it short.");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByText("Saved.").waitFor();
    expect((await readBack(uuid)).title.de).toBe("[de] Hello World");
    await page.close();
  });

  test("every html button's output survives a save unchanged; custom buttons of each kind work", async () => {
    const page = await signedIn(`/admin/articles/${uuid}`);
    await editorOf(page, "body").waitFor();
    page.on("dialog", (d) => void (d.type() === "prompt" ? d.accept("https://example.com/a?b=1&c=2") : d.accept()));
    let events = 0;
    await page.exposeFunction("countPing", () => events++);
    await page.evaluate(`document.addEventListener("resd-ping", () => window.countPing())`);
    const setDoc = (html: string) => page.evaluate(`(() => { const e = document.querySelector('[data-html-field="body"] .html-editor').editor; e.commands.setContent(${JSON.stringify(html)}, { emitUpdate: true }); e.commands.setTextSelection({ from: 1, to: 12 }); e.commands.focus(); })()`);
    const current = () => page.evaluate(`document.querySelector('[data-html-field="body"] .html-editor').editor.getHTML()`) as Promise<string>;
    const buttons = ["h2", "h3", "h4", "bold", "italic", "orderedlist", "unorderedlist", "quote", "anchor", "pre", "strikethrough", "subscript", "superscript", "underline", "note", "mark", "strong2", "bullets", "weblink", "removeFormat"];
    const produced: Record<string, string> = {};
    for (const b of buttons) {
      await setDoc(b === "removeFormat" ? "<h2><strong>sample text</strong></h2>" : "<p>sample text</p>");
      await page.locator(`[data-html-field="body"] .toolbar-row [data-button="${b}"]`).click();
      if (b === "anchor" || b === "weblink") {
        // The link dialog: an address typed, Enter sets it.
        const address = page.locator("dialog[open]").getByLabel("Link address (empty removes the link)");
        await address.fill("https://example.com/a?b=1&c=2");
        await address.press("Enter");
        await until(page, `!document.querySelector("dialog[open]")`);
      }
      const html = await current();
      produced[b] = html;
      const saved = page.waitForResponse((r) => r.request().method() === "PUT" && r.url().endsWith(`/api/v1/articles/${uuid}`));
      await page.getByRole("button", { name: "Save" }).click();
      const stored = ((await (await saved).json()) as any).articles[uuid].body;
      expect(stored, b).toBe(html);
    }
    expect(produced.h2).toBe("<h2>sample text</h2>");
    expect(produced.bold).toBe("<p><strong>sample text</strong></p>");
    expect(produced.anchor).toBe('<p><a href="https://example.com/a?b=1&amp;c=2">sample text</a></p>');
    expect(produced.note).toBe("<aside>sample text</aside>");
    expect(produced.mark).toBe('<p><span class="highlight">sample text</span></p>');
    expect(produced.strong2).toBe(produced.bold);
    expect(produced.bullets).toBe(produced.unorderedlist);
    expect(produced.removeFormat).toBe("<p>sample text</p>");
    // insert (beside Media) and event.
    await setDoc("<p>sample text</p>");
    await page.locator('[data-html-field="body"] [data-button="rule"]').click();
    expect(await current()).toContain("<hr>");
    await page.locator('[data-html-field="body"] [data-button="ping"]').click();
    expect(events).toBe(1);
    // `active`: the button shows as active while the cursor is inside a matching element.
    await setDoc('<p>plain <span class="highlight">marked</span></p>');
    const markButton = page.locator('[data-html-field="body"] .toolbar-row [data-button="mark"]');
    await page.evaluate(`document.querySelector('[data-html-field="body"] .html-editor').editor.commands.setTextSelection(10)`);
    expect(await markButton.getAttribute("aria-pressed")).toBe("true");
    await page.evaluate(`document.querySelector('[data-html-field="body"] .html-editor').editor.commands.setTextSelection(3)`);
    expect(await markButton.getAttribute("aria-pressed")).toBe("false");
    // The bubble toolbar on selected text carries the bubble buttons.
    await setDoc("<p>sample text</p>");
    await page.locator('[data-html-field="body"] .bubble [data-button="mark"]').click();
    expect(await current()).toBe('<p><span class="highlight">sample text</span></p>');
    await page.close();
  });

  test("paste keeps plain text without paste_html", async () => {
    const page = await signedIn(`/admin/articles/${uuid}`);
    await editorOf(page, "simple").waitFor();
    await page.evaluate(`(() => {
      const el = document.querySelector('[data-html-field="simple"] .html-editor');
      el.editor.commands.setContent("<p></p>");
      el.editor.commands.focus();
      const data = new DataTransfer();
      data.setData("text/html", "<p><b>bold</b> <a href='https://x.example'>link</a></p>");
      data.setData("text/plain", "bold link");
      el.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
    })()`);
    expect(await page.evaluate(`document.querySelector('[data-html-field="simple"] .html-editor').editor.getHTML()`)).toBe("<p>bold link</p>");
    await page.close();
  });

  test("upload an image, insert it into the html field at a media size, and see the record in .files-usage", async () => {
    const page = await signedIn(`/admin/articles/${uuid}`);
    await editorOf(page, "body").waitFor();
    await page.evaluate(`(() => { const e = document.querySelector('[data-html-field="body"] .html-editor').editor; e.commands.setContent("<p>before</p>"); e.commands.focus("end"); })()`);
    await page.locator('[data-html-field="body"] [data-button="media"]').click();
    const dialog = page.locator("dialog[open]");
    await dialog.getByLabel("Size").selectOption("md-70");
    const png3 = await sharp({ create: { width: 50, height: 50, channels: 3, background: "#3c3" } }).png().toBuffer();
    await dialog.locator("input[type=file]").setInputFiles({ name: "green.png", mimeType: "image/png", buffer: png3 });
    await dialog.waitFor({ state: "detached" });
    const md5 = new Bun.CryptoHasher("md5").update(png3).digest("hex");
    const html = (await page.evaluate(`document.querySelector('[data-html-field="body"] .html-editor').editor.getHTML()`)) as string;
    expect(html).toContain(`src="/img/${md5}/1280w"`);
    expect(html).toContain('class="md-70"');
    expect(html).toContain('sizes="70vw"');
    const saved = page.waitForResponse((r) => r.request().method() === "PUT");
    await page.getByRole("button", { name: "Save" }).click();
    expect(((await (await saved).json()) as any).articles[uuid].body).toBe(html);
    const usage = await s.apiJson("GET", `/api/v1/.files-usage?uuid=${md5}`);
    expect(usage.body!.usage).toEqual([{ resource: "articles", uuid, fields: ["body"] }]);
    // The media library page shows where it is used.
    await page.goto(`${s.base}/admin/files`);
    await page.locator(`li[data-file="${md5}"]`).getByRole("button", { name: "Used where" }).click();
    await page.locator("dialog[open] a", { hasText: `articles/${uuid}` }).waitFor();
    await page.close();
  });

  test("Import from .docx fills the new-record form from import-document; rejected values are shown at their fields", async () => {
    const page = await signedIn("/admin/articles/new");
    await field(page, "title").waitFor();
    const file = Buffer.from(await docx(["From the document", "First paragraph."]));
    await page.locator(".from-docx input[type=file]").setInputFiles({ name: "story.docx", mimeType: "application/vnd.openxmlformats-officedocument.wordprocessingml.document", buffer: file });
    await page.getByText("Filled from story.docx").waitFor();
    expect(await field(page, "title").locator("[data-language=en] input").inputValue()).toBe("From the document");
    expect(await field(page, "summary").locator("textarea").inputValue()).toBe("First paragraph.");
    expect(await field(page, "rating").locator(".field-error").textContent()).toContain("5"); // 42 is above max
    expect(await field(page, "slug").locator("[data-language=en] input").inputValue()).toBe("from-the-document");
    await page.close();
  });

  test("location: with RESD_MAP_TILES a map from that tile server; a click sets latitude and longitude", async () => {
    const page = await signedIn(`/admin/articles/${uuid}`);
    const map = field(page, "lat").locator("[data-map]");
    await map.waitFor();
    await until(page, `[...document.querySelectorAll("[data-map] img")].every((i) => i.complete)`);
    expect(tileRequests.some((p) => /^\/tiles\/12\/\d+\/\d+\.png$/.test(p))).toBe(true); // zoom 12 around the saved point
    const box = (await map.boundingBox())!;
    await map.click({ position: { x: box.width / 2 + 100, y: box.height / 2 - 50 } });
    const lat = Number(await field(page, "lat").getByLabel("Latitude").inputValue());
    const lng = Number(await field(page, "lat").getByLabel("Longitude").inputValue());
    expect(lat).toBeGreaterThan(52.52); // north-east of the old point
    expect(lng).toBeGreaterThan(13.405);
    expect(Math.abs(lat - 52.52)).toBeLessThan(0.05);
    await map.getByRole("button", { name: "Zoom in" }).click();
    await until(page, `[...document.querySelectorAll("[data-map] img")].some((i) => i.src.includes("/tiles/13/"))`);
    await page.close();
  });

  test("media library page: several files dropped at once with progress; titles edited; a too-large file named", async () => {
    const page = await signedIn("/admin/files");
    await page.locator("[data-dropzone] input[type=file]").setInputFiles([
      { name: "a.txt", mimeType: "text/plain", buffer: Buffer.from("file a") },
      { name: "b.txt", mimeType: "text/plain", buffer: Buffer.from("file b") },
    ]);
    const md5a = new Bun.CryptoHasher("md5").update("file a").digest("hex");
    await page.locator(`li[data-file="${md5a}"]`).waitFor();
    // One progress bar per file, both full.
    expect(await page.locator("[data-upload] progress").evaluateAll((els) => els.map((e) => (e as unknown as { value: number }).value))).toEqual([1, 1]);
    await page.locator("[data-dropzone] input[type=file]").setInputFiles([{ name: "huge.bin", mimeType: "application/octet-stream", buffer: Buffer.alloc(3_000_000, 1) }]);
    const refused = page.locator('[data-upload="huge.bin"] .error');
    await refused.waitFor();
    expect(await refused.textContent()).toContain("huge.bin is larger than the server accepts");
    await page.locator(`li[data-file="${md5a}"] input`).fill("File A");
    await page.locator(`li[data-file="${md5a}"] input`).press("Tab");
    await until(page, `fetch("/api/v1/.files/${md5a}").then((r) => r.json()).then((b) => b.files["${md5a}"].title === "File A")`);
    await page.close();
  });
});

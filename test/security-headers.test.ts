/**
 * Black-box: the security headers of every kind of answer (API JSON, errors, 404s, the GET-one hot
 * path, media, the admin pages and their assets, Swagger UI and its assets), and in Debian's
 * chromium that a page of another origin cannot frame /admin or /swagger, while the admin pages
 * (sign-in, the html editor, the map of a location field) and Swagger UI run under their
 * Content-Security-Policy without a single violation.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chromium, type Browser, type Page } from "playwright-core";
import sharp from "sharp";
import type { Server } from "bun";
import { join } from "node:path";
import { adminSite, ROOT } from "./helpers/site";
import { upload } from "./helpers/media";
import { adminPolicy, TIPTAP_STYLE_HASH, tileSource } from "../src/http/security-headers";
import { until } from "./helpers/page-wait";

const articles = {
  fields: {
    title: { type: "text", required: true },
    body: { type: "html", buttons: "bold,italic", admin_col: false },
    lat: { type: "location-picker", longitude_field: "lng" },
    lng: { type: "number" },
  },
};

/** A tile server of its own origin (RESD_MAP_TILES): every tile one grey PNG. */
const tilePng = await sharp({ create: { width: 256, height: 256, channels: 3, background: "#ddd" } }).png().toBuffer();
const tiles: Server<undefined> = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: () => new Response(new Uint8Array(tilePng), { headers: { "content-type": "image/png" } }),
});
const tileOrigin = `http://127.0.0.1:${tiles.port}`;

type Site = Awaited<ReturnType<typeof adminSite>>;
let s: Site;
let cors: Site;
let browser: Browser;
let uuid = "";
let imageId = "";

beforeAll(async () => {
  [s, cors] = await Promise.all([
    adminSite({ defs: { articles }, env: { RESD_MAP_TILES: `${tileOrigin}/tiles/{z}/{x}/{y}.png` } }),
    // With CORS on, the GET-one hot path answers through a promise: checked separately.
    adminSite({ defs: { articles }, env: { RESD_CORS_ORIGINS: "https://app.example.com" } }),
  ]);
  const made = await s.apiJson("POST", "/api/v1/articles", { title: "Berlin", body: "<p>Hello</p>", lat: 52.52, lng: 13.405 });
  expect(made.status).toBe(201);
  uuid = Object.keys(made.body!.articles)[0];
  const png = await sharp({ create: { width: 40, height: 30, channels: 3, background: "#c33" } }).png().toBuffer();
  imageId = await upload(s, png, "red.png", "image/png");
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await Promise.all([s?.cleanup(), cors?.cleanup()]);
  tiles.stop(true);
});

/** A Content-Security-Policy as directive → sources. */
function policy(res: Response): Map<string, string[]> {
  const raw = res.headers.get("content-security-policy");
  expect(raw).not.toBeNull();
  return new Map(raw!.split(";").map((d) => d.trim()).filter(Boolean).map((d) => {
    const [name, ...sources] = d.split(/\s+/);
    return [name.toLowerCase(), sources] as [string, string[]];
  }));
}

/** What every answer of the server carries, whatever it is. */
function expectEveryAnswer(res: Response, what: string) {
  expect({ what, nosniff: res.headers.get("x-content-type-options") }).toEqual({ what, nosniff: "nosniff" });
  expect({ what, referrer: res.headers.get("referrer-policy") }).toEqual({ what, referrer: "strict-origin-when-cross-origin" });
}

/** What every answer of /admin and /swagger carries on top: no framing, by anyone. */
function expectUnframeable(res: Response, what: string) {
  expectEveryAnswer(res, what);
  expect({ what, xfo: res.headers.get("x-frame-options") }).toEqual({ what, xfo: "DENY" });
  expect({ what, ancestors: policy(res).get("frame-ancestors") }).toEqual({ what, ancestors: ["'none'"] });
}

/** No inline script, no eval, no plugins, no <base>, forms only to us — for every policy we send. */
function expectStrictScript(p: Map<string, string[]>) {
  expect(p.get("default-src")).toEqual(["'self'"]);
  expect(p.get("script-src")).toEqual(["'self'"]);
  expect(p.get("object-src")).toEqual(["'none'"]);
  expect(p.get("base-uri")).toEqual(["'none'"]);
  expect(p.get("form-action")).toEqual(["'self'"]);
  expect(p.get("connect-src")).toEqual(["'self'"]);
  for (const [name, sources] of p) {
    expect({ name, unsafe: sources.filter((x) => x === "'unsafe-eval'" || (x === "'unsafe-inline'" && name.startsWith("script"))) }).toEqual({ name, unsafe: [] });
  }
}

describe("the policies themselves", () => {
  test("the hash admitting Tiptap's stylesheet is that of the installed @tiptap/core", async () => {
    const dist = await Bun.file(join(ROOT, "node_modules/@tiptap/core/dist/index.js")).text();
    const style = /\bconst style = `([^`]*)`/.exec(dist)?.[1];
    expect(style).toContain(".ProseMirror");
    expect(TIPTAP_STYLE_HASH).toBe(`'sha256-${new Bun.CryptoHasher("sha256").update(style!).digest("base64")}'`);
  });

  test("the tile server is named by its origin only; a setting that would change the policy adds nothing", () => {
    expect(tileSource("https://tile.example.org/osm/{z}/{x}/{y}.png?key=a;b")).toBe("https://tile.example.org");
    expect(tileSource("http://127.0.0.1:8080/{z}/{x}/{y}.png")).toBe("http://127.0.0.1:8080");
    expect(tileSource("/tiles/{z}/{x}/{y}.png")).toBeNull(); // our own origin: 'self'
    expect(tileSource("")).toBeNull();
    expect(tileSource("https://a;script-src/{z}/{x}/{y}.png")).toBeNull();
    expect(tileSource("https://x',evil/{z}/{x}/{y}.png")).toBeNull();
    expect(adminPolicy("https://a;b/{z}/{x}/{y}").split(";").length).toBe(adminPolicy("").split(";").length);
  });
});

describe("headers", () => {
  test("/admin, a deep link, its script and stylesheet and a missing asset: a strict policy and no framing", async () => {
    const page = await fetch(`${s.base}/admin`);
    expect(page.status).toBe(200);
    expectUnframeable(page, "/admin");
    const html = await page.text();
    const p = policy(page);
    expectStrictScript(p);
    // The tile server named by RESD_MAP_TILES, and nothing else from elsewhere.
    expect(p.get("img-src")).toEqual(["'self'", "data:", tileOrigin]);
    expect(p.get("style-src")?.[0]).toBe("'self'");
    expect(p.get("style-src")).not.toContain("'unsafe-inline'");
    // No inline script in the page itself.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    const assets = [...html.matchAll(/(?:src|href)="(\/admin\/assets\/[^"]+)"/g)].map((m) => m[1]);
    expect(assets.some((a) => a.endsWith(".js"))).toBe(true);
    expect(assets.some((a) => a.endsWith(".css"))).toBe(true);
    for (const path of [...assets, "/admin/articles/new", `/admin/articles/${uuid}`, "/admin/"]) {
      const res = await fetch(s.base + path);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      expectUnframeable(res, path);
      await res.arrayBuffer();
    }
    const missing = await fetch(`${s.base}/admin/assets/nope-123.js`);
    expect(missing.status).toBe(404);
    expectUnframeable(missing, "missing admin asset");
  });

  test("/swagger and its assets: its own policy, no inline script, no framing", async () => {
    const page = await fetch(`${s.base}/swagger`);
    expect(page.status).toBe(200);
    expectUnframeable(page, "/swagger");
    const p = policy(page);
    expectStrictScript(p);
    expect(p.get("img-src")).toEqual(["'self'", "data:", "blob:"]);
    const html = await page.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/<style\b/);
    const assets = [...html.matchAll(/(?:src|href)="(\/swagger\/[^"]+)"/g)].map((m) => m[1]);
    expect(assets.length).toBeGreaterThanOrEqual(3); // Swagger UI's script and stylesheet, and the page's own script
    for (const path of assets) {
      const res = await fetch(s.base + path);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      expectUnframeable(res, path);
      await res.arrayBuffer();
    }
  });

  test("API answers, errors, 404s, the GET-one hot path and media: nosniff and the referrer policy, and no frame ban", async () => {
    const checks: [string, number, () => Promise<Response>][] = [
      ["list", 200, () => s.api("GET", "/api/v1/articles")],
      ["GET one (hot path)", 200, () => s.api("GET", `/api/v1/articles/${uuid}`)],
      ["HEAD one (hot path)", 200, () => s.api("HEAD", `/api/v1/articles/${uuid}`)],
      ["GET one, not there (hot path)", 404, () => s.api("GET", `/api/v1/articles/${crypto.randomUUID()}`)],
      ["GET one, anonymous (hot path)", 403, () => fetch(`${s.base}/api/v1/articles/${uuid}`)],
      ["create", 201, () => s.api("POST", "/api/v1/articles", { title: "Another" })],
      ["invalid (no title)", 422, () => s.api("POST", "/api/v1/articles", { lng: 1 })],
      ["anonymous list", 403, () => fetch(`${s.base}/api/v1/articles`)],
      ["bad token", 401, () => fetch(`${s.base}/api/v1/articles`, { headers: { authorization: "Bearer nope" } })],
      ["no route", 404, () => fetch(`${s.base}/no/such/path`)],
      ["no resource", 404, () => s.api("GET", "/api/v1/nothing-here")],
      ["OpenAPI document", 200, () => s.api("GET", "/api/v1/openapi.json")],
      ["health", 200, () => fetch(`${s.base}/health`)],
      ["download", 200, () => fetch(`${s.base}/download/${imageId}`)],
      ["resized image", 200, () => fetch(`${s.base}/img/${imageId}/20w`)],
      ["unparsable JSON", 400, () => s.api("POST", "/api/v1/articles", "{")],
    ];
    for (const [what, status, call] of checks) {
      const res = await call();
      expect({ what, status: res.status }).toEqual({ what, status });
      expectEveryAnswer(res, what);
      // Only the admin pages and Swagger UI refuse framing: a site may well frame its own media.
      expect({ what, xfo: res.headers.get("x-frame-options") }).toEqual({ what, xfo: null });
      await res.arrayBuffer();
    }
  });

  test("with CORS on: the preflight, the hot path and a CORS answer carry them too", async () => {
    const made = await cors.apiJson("POST", "/api/v1/articles", { title: "x" });
    const id = Object.keys(made.body!.articles)[0];
    const origin = { origin: "https://app.example.com" };
    const preflight = await fetch(`${cors.base}/api/v1/articles/${id}`, { method: "OPTIONS", headers: { ...origin, "access-control-request-method": "GET" } });
    expect(preflight.status).toBe(204);
    expectEveryAnswer(preflight, "preflight");
    const one = await cors.api("GET", `/api/v1/articles/${id}`, undefined, origin);
    expect(one.status).toBe(200);
    expect(one.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expectEveryAnswer(one, "GET one with CORS");
    const admin = await fetch(`${cors.base}/admin`);
    expectUnframeable(admin, "/admin with CORS");
    // No tile server named: images from our origin only.
    expect(policy(admin).get("img-src")).toEqual(["'self'", "data:"]);
  });
});

/** Every CSP violation the page reports, as events (through a binding, so they survive navigations) and console lines. */
async function watchViolations(page: Page): Promise<string[]> {
  const seen: string[] = [];
  await page.exposeBinding("__cspViolation", (_source, text: string) => void seen.push(text));
  await page.addInitScript({
    content: `document.addEventListener("securitypolicyviolation", (e) => window.__cspViolation(e.effectiveDirective + " blocked " + e.blockedURI + " " + e.sample), true);`,
  });
  page.on("console", (m) => { if (/content security policy/i.test(m.text())) seen.push(`console: ${m.text()}`); });
  page.on("pageerror", (e) => seen.push(`pageerror: ${e.message}`));
  return seen;
}

/** Proves the watch sees what the policy blocks: an inline script added to the page is refused and reported. */
async function expectInlineScriptRefused(page: Page, seen: string[]) {
  await page.evaluate(`(() => { const el = document.createElement("script"); el.textContent = "window.__inlineRan = true"; document.body.append(el); })()`);
  const deadline = Date.now() + 5000;
  while (!seen.some((v) => v.startsWith("script-src-elem blocked inline")) && Date.now() < deadline) await Bun.sleep(50);
  expect(await page.evaluate("window.__inlineRan === true")).toBe(false);
  expect(seen.filter((v) => !v.startsWith("console:"))).toEqual([expect.stringMatching(/^script-src-elem blocked inline/)]);
}

describe("in chromium", () => {
  test("a page of another origin cannot frame /admin or /swagger", async () => {
    const attacker: Server<undefined> = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () => new Response(
        `<!doctype html><title>attacker</title><iframe name="admin" src="${s.base}/admin/sign-in"></iframe><iframe name="swagger" src="${s.base}/swagger"></iframe>`,
        { headers: { "content-type": "text/html" } },
      ),
    });
    try {
      const page = await browser.newPage();
      const refusals: string[] = [];
      page.on("console", (m) => { if (m.text().includes("frame-ancestors 'none'")) refusals.push(m.text()); });
      // The frames' own documents are loaded (so the answers did arrive) before the page's load event.
      const answered = Promise.all([
        page.waitForResponse((r) => r.url() === `${s.base}/admin/sign-in`),
        page.waitForResponse((r) => r.url() === `${s.base}/swagger`),
      ]);
      await page.goto(`http://127.0.0.1:${attacker.port}/`, { waitUntil: "load" });
      await answered;
      await Bun.sleep(500); // the admin's module script would have rendered its sign-in form by now
      for (const name of ["admin", "swagger"]) {
        const frame = page.frame({ name });
        expect(frame).not.toBeNull();
        // Chromium puts its own error page in place of a refused document.
        expect({ name, url: frame!.url() }).toEqual({ name, url: "chrome-error://chromewebdata/" });
        const content = await frame!.content();
        expect({ name, blocked: content.includes("ERR_BLOCKED_BY_RESPONSE"), leaked: /\/admin\/assets\/|swagger-ui-bundle/.test(content) }).toEqual({ name, blocked: true, leaked: false });
      }
      // "Framing '…' violates the following Content Security Policy directive: "frame-ancestors 'none'"", once per frame.
      expect(refusals.length).toBe(2);
      await page.close();
    } finally {
      attacker.stop(true);
    }
  });

  test("the admin pages run under their policy with no violation: sign-in, the html editor, the map, a save", async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const seen = await watchViolations(page);
    const first = await page.goto(`${s.base}/admin/articles/${uuid}`);
    expect(first!.headers()["content-security-policy"]).toContain("script-src 'self'");
    await page.waitForURL(/\/admin\/sign-in\?next=/);
    await page.getByLabel("E-mail").fill("admin@example.com");
    await page.getByLabel("Password").fill("admin-password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL((u) => u.pathname === `/admin/articles/${uuid}`);

    const editor = page.locator('[data-html-field="body"] .html-editor');
    await editor.waitFor();
    // Tiptap's own stylesheet (an inline <style> it adds) is in force: ProseMirror's whitespace rule.
    expect(await page.evaluate(`getComputedStyle(document.querySelector('[data-html-field="body"] .html-editor')).whiteSpace`)).toBe("break-spaces");
    await editor.click();
    await page.keyboard.press("End");
    await page.keyboard.type(" world");
    await page.keyboard.press("ControlOrMeta+a");
    await page.locator('[data-html-field="body"] .toolbar-row [data-button="bold"]').click();
    expect(await page.evaluate(`document.querySelector('[data-html-field="body"] .html-editor').editor.getHTML()`)).toBe("<p><strong>Hello world</strong></p>");

    const map = page.locator('form.fields > [data-field="lat"] [data-map]');
    await map.waitFor();
    // The tiles come from the tile server's origin, which the policy names.
    await until(page, `[...document.querySelectorAll("[data-map] img")].length > 0 && [...document.querySelectorAll("[data-map] img")].every((i) => i.complete && i.naturalWidth === 256)`);
    const box = (await map.boundingBox())!;
    await map.click({ position: { x: box.width / 2 + 60, y: box.height / 2 - 40 } });
    await map.getByRole("button", { name: "Zoom in" }).click();
    await until(page, `[...document.querySelectorAll("[data-map] img")].some((i) => i.src.includes("/tiles/13/"))`);

    await page.getByRole("button", { name: "Save" }).click();
    await page.getByText("Saved.").waitFor();
    expect(seen).toEqual([]);
    await expectInlineScriptRefused(page, seen);
    await page.close();
  });

  test("Swagger UI runs under its policy with no violation: sign-in and the operations shown", async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const seen = await watchViolations(page);
    const first = await page.goto(`${s.base}/swagger`);
    expect(first!.headers()["content-security-policy"]).toContain("script-src 'self'");
    await page.getByPlaceholder("E-mail").fill("admin@example.com");
    await page.getByPlaceholder("Password").fill("admin-password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.locator(".opblock").first().waitFor();
    // Open one operation and run it: Swagger UI's own requests and rendering of the answer.
    const op = page.locator(".opblock-get", { hasText: "/api/v1/articles" }).first();
    await op.locator(".opblock-summary").click();
    await op.getByRole("button", { name: "Try it out" }).click();
    await op.getByRole("button", { name: "Execute" }).click();
    await op.locator(".responses-wrapper .live-responses-table .response-col_status").first().waitFor();
    expect(seen).toEqual([]);
    await expectInlineScriptRefused(page, seen);
    await page.close();
  });
});

/** A broken extension or hooks configuration stops `resd serve` with the file named; nothing listens. */
import { afterAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { makeSite, MAIN } from "./helpers/site";

const FIX = join(import.meta.dir, "fixtures");
const fixtureFiles = (name: string, rename: (f: string) => string = (f) => f) =>
  Object.fromEntries(readdirSync(join(FIX, name)).map((f) => [`ext/${rename(f)}`, readFileSync(join(FIX, name, f), "utf8")]));

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** Runs `resd serve` and expects it to exit by itself (a hang means it started: the test fails). */
async function serveFails(files: Record<string, string>, defs: Record<string, unknown> = {}) {
  const dir = makeSite({ files, defs });
  dirs.push(dir);
  const p = Bun.spawn([process.execPath, MAIN, "serve", "--dir", dir, "--port", "0", "--host", "127.0.0.1"], { cwd: dir, stdout: "pipe", stderr: "pipe" });
  const timer = setTimeout(() => p.kill("SIGKILL"), 15_000);
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  clearTimeout(timer);
  return { dir, stdout, stderr, code };
}

describe("start-up refuses a broken extension", () => {
  test("syntax error", async () => {
    const r = await serveFails(fixtureFiles("ext-broken-syntax", (f) => f.replace(/\.txt$/, "")));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(join(r.dir, "ext/bad.ts"));
    expect(r.stderr).toContain("cannot load");
    expect(r.stdout).not.toContain("listening");
  });

  test("throwing (rejecting) init, after a good extension loaded", async () => {
    const r = await serveFails(fixtureFiles("ext-broken-init"));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`${join(r.dir, "ext/boom.js")}: failed to start: init refuses to start`);
    expect(r.stdout).not.toContain("listening");
  });

  test("no default function", async () => {
    const r = await serveFails(fixtureFiles("ext-broken-export"));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`${join(r.dir, "ext/noexport.js")}: must export a default function`);
    expect(r.stdout).not.toContain("listening");
  });

  test("a route that would shadow a resource, and a job type handled twice", async () => {
    const shadow = await serveFails(
      { "ext/a.js": `export default (api) => api.route("GET", "/api/v1/articles/count", () => ({}));` },
      { articles: { fields: { title: { type: "text" } } } },
    );
    expect(shadow.code).not.toBe(0);
    expect(shadow.stderr).toContain(`${join(shadow.dir, "ext/a.js")}: route(GET, "/api/v1/articles/count"): /api/v1/articles is the resource "articles"`);
    const twice = await serveFails({
      "ext/a.js": `export default (api) => api.job("mail", () => {});`,
      "ext/b.js": `export default (api) => api.job("mail", () => {});`,
    });
    expect(twice.code).not.toBe(0);
    expect(twice.stderr).toContain(`${join(twice.dir, "ext/b.js")}: job("mail"): already handled by ${join(twice.dir, "ext/a.js")}`);
  });

  test("registering after start-up is refused (no late, half-registered extension)", async () => {
    const dir = makeSite({ files: { "ext/late.js": `export default (api) => { globalThis.lateApi = api; };` } });
    dirs.push(dir);
    // Loaded in-process: the registry is frozen once loading finished.
    const { openSiteAt } = await import("../src/core/open-site");
    const { loadExtensions } = await import("../src/core/extensions/load");
    const site = await openSiteAt(dir);
    await loadExtensions(site);
    const api = (globalThis as { lateApi?: { on: (e: string, h: () => void) => void } }).lateApi!;
    expect(() => api.on("x", () => {})).toThrow("registrations are accepted only while the extension starts");
    await site.close();
  });

  test("malformed events or sitemap in a definition name the definition file", async () => {
    const r = await serveFails({}, { things: { fields: { title: { type: "text" } }, events: { create: "job:x" }, sitemap: { url: "/t/[#record.nope#]" } } });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(join(r.dir, "resources/things.json"));
    expect(r.stderr).toContain("events.create must be a list");
    expect(r.stderr).toContain("[#record.nope#] is not a visible field");
  });
});

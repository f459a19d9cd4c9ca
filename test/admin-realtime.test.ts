/**
 * The admin pages over /api/v1/realtime (issue 35), in chromium: overviews follow changes made
 * elsewhere without asking the list again and again, a form says when someone else saved or deleted
 * its record, and a save over a newer version asks first (If-Match, 412).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chromium, type Browser, type Page } from "playwright-core";
import { adminSite, cli } from "./helpers/site";
import { signedInPage, until } from "./helpers/page-wait";
import { expectNoAxeViolations } from "./helpers/axe";

const notes = {
  name: { singular: "Note", plural: "Notes" },
  fields: {
    title: { type: "text", required: true },
    status: { type: "select", options: { new: "New", done: "Done" }, admin_filter: true },
    year: { type: "number" },
  },
};

let s: Awaited<ReturnType<typeof adminSite>>;
let browser: Browser;
/** Bob: another administrator, who writes through the API with his own token. */
let bobToken = "";
let bobUuid = "";
beforeAll(async () => {
  s = await adminSite({ defs: { notes } });
  const add = await cli(s.dir, ["user", "add", "bob@example.com", "--password", "bob-password-1", "--role", "admin", "--name", "Bob Builder", "--api"]);
  if (add.code !== 0) throw new Error(add.stderr);
  const tok = await cli(s.dir, ["token", "bob@example.com"]);
  if (tok.code !== 0) throw new Error(tok.stderr);
  bobToken = tok.stdout.trim();
  const users = Object.values((await s.apiJson("GET", "/api/v1/users?limit=100")).body!.users as Record<string, { uuid: string; email: string }>);
  bobUuid = users.find((u) => u.email === "bob@example.com")!.uuid;
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await s?.cleanup();
});

async function bob(method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, any> }> {
  const res = await fetch(s.base + path, {
    method,
    headers: { authorization: `Bearer ${bobToken}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

const create = async (record: Record<string, unknown>) => {
  const r = await bob("POST", "/api/v1/notes", record);
  expect(r.status).toBe(201);
  return Object.keys(r.body.notes)[0];
};
const stored = async (uuid: string) => (await s.apiJson("GET", `/api/v1/notes/${uuid}`)).body!.notes[uuid] as Record<string, unknown>;
const row = (page: Page, uuid: string) => page.locator(`tr[data-uuid="${uuid}"]`);

/** Requests for the overview's list (GET /api/v1/notes…), counted from the page's start. */
function countLists(page: Page): { n: number } {
  const c = { n: 0 };
  page.on("request", (r) => { if (r.method() === "GET" && new URL(r.url()).pathname === "/api/v1/notes") c.n++; });
  return c;
}

/** A page signed in as the test site's admin whose list requests are counted from its first. */
async function overview(path: string): Promise<{ page: Page; lists: { n: number } }> {
  const page = await signedInPage(browser, s.base, "/admin");
  const lists = countLists(page);
  await page.goto(`${s.base}${path}`);
  await page.locator("table.records tbody").waitFor();
  return { page, lists };
}

describe("live overviews", () => {
  test("two pages on the same overview see records created, changed and deleted elsewhere, without reloading and without polling", async () => {
    const first = await create({ title: "Already there", status: "new", year: 2020 });
    const a = await overview("/admin/notes");
    const b = await overview("/admin/notes");
    await row(a.page, first).waitFor();
    await row(b.page, first).waitFor();
    // A reload of the page would lose this.
    await a.page.evaluate("window.__stillHere = true");

    // Created through the API: both pages show it.
    const made = await create({ title: "Made by Bob", status: "new", year: 2021 });
    await row(a.page, made).waitFor({ timeout: 5000 });
    await row(b.page, made).waitFor({ timeout: 5000 });
    expect(await row(a.page, made).locator('[data-col="title"]').textContent()).toBe("Made by Bob");

    // Created in the other page's form: the first page shows it.
    await b.page.getByRole("link", { name: "New note" }).click();
    await b.page.locator('[data-field="title"] input').fill("Made in page B");
    await b.page.getByRole("button", { name: "Save" }).click();
    await b.page.waitForURL((u) => /^\/admin\/notes\/[0-9a-f-]{36}$/.test(u.pathname));
    const fromB = new URL(b.page.url()).pathname.split("/").at(-1)!;
    await row(a.page, fromB).waitFor({ timeout: 5000 });

    // Changed: the row changes.
    expect((await bob("PUT", `/api/v1/notes/${made}`, { title: "Changed by Bob" })).status).toBe(200);
    await until(a.page, `document.querySelector('tr[data-uuid="${made}"] [data-col="title"]')?.textContent === "Changed by Bob"`, 5000);

    // Deleted: the row leaves.
    expect((await bob("DELETE", `/api/v1/notes/${made}`)).status).toBe(200);
    await row(a.page, made).waitFor({ state: "detached", timeout: 5000 });
    expect(await a.page.evaluate("window.__stillHere === true")).toBe(true);

    // Idle: the list is not asked again (the old poll asked every 5 s).
    await Bun.sleep(500);
    const before = a.lists.n;
    await Bun.sleep(6500);
    expect(a.lists.n).toBe(before);
    // From the start: the first load and one per change seen (created ×2, changed, deleted), no more.
    expect(a.lists.n).toBeLessThanOrEqual(1 + 4 * 2);
    await a.page.context().close();
    await b.page.context().close();
  }, 60_000);

  test("a filtered, sorted page keeps its filter and sort: a record that comes to match appears in its place, one that stops matching leaves", async () => {
    const old = await create({ title: "Done long ago", status: "done", year: 1999 });
    const recent = await create({ title: "Done lately", status: "done", year: 2030 });
    const { page } = await overview("/admin/notes?filter%5Bstatus%5D=done&sort=year%7Cdesc");
    await row(page, recent).waitFor();
    const uuids = () => page.locator("tbody tr[data-uuid]").evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-uuid")));
    expect((await uuids()).indexOf(recent)).toBeLessThan((await uuids()).indexOf(old));

    const open = await create({ title: "Still open", status: "new", year: 2010 });
    await Bun.sleep(800);
    expect(await row(page, open).count()).toBe(0);
    // Done now: it comes in between the two, by year.
    expect((await bob("PUT", `/api/v1/notes/${open}`, { status: "done" })).status).toBe(200);
    await row(page, open).waitFor({ timeout: 5000 });
    const order = await uuids();
    expect(order.indexOf(recent)).toBeLessThan(order.indexOf(open));
    expect(order.indexOf(open)).toBeLessThan(order.indexOf(old));
    // Open again: it leaves this page.
    expect((await bob("PUT", `/api/v1/notes/${open}`, { status: "new" })).status).toBe(200);
    await row(page, open).waitFor({ state: "detached", timeout: 5000 });
    await page.context().close();
  }, 60_000);
});

/** A page with the form of `uuid`, loaded. */
async function form(uuid: string): Promise<Page> {
  const page = await signedInPage(browser, s.base, `/admin/notes/${uuid}`);
  await page.locator('[data-field="title"] input').waitFor();
  // The form loads once its stream is open: what happens after this is told.
  await until(page, `document.querySelector('[data-field="title"] input')?.value !== ""`);
  return page;
}
const notice = (page: Page) => page.locator('.live-notice[role="status"]');

describe("the form", () => {
  test("someone else's save is told, naming them; Reload brings their version", async () => {
    const uuid = await create({ title: "First version", status: "new" });
    const page = await form(uuid);
    expect(await notice(page).getAttribute("aria-live")).toBe("polite");

    // The page's own save is no news.
    await page.locator('[data-field="title"] input').fill("Saved here");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByText("Saved.").waitFor();
    await Bun.sleep(600);
    expect((await notice(page).textContent())?.trim()).toBe("");

    expect((await bob("PUT", `/api/v1/notes/${uuid}`, { title: "Bob's version" })).status).toBe(200);
    await notice(page).getByText("Changed by Bob Builder a moment ago.").waitFor({ timeout: 5000 });
    expect(await page.locator('[data-field="title"] input').inputValue()).toBe("Saved here");
    await expectNoAxeViolations(page, "the form telling someone else's change");
    await notice(page).getByRole("button", { name: "Reload" }).click();
    await until(page, `document.querySelector('[data-field="title"] input')?.value === "Bob's version"`);
    expect((await notice(page).textContent())?.trim()).toBe("");

    // With edits of its own, Reload asks first; declined, the edits stay.
    await page.locator('[data-field="title"] input').fill("My edit");
    expect((await bob("PUT", `/api/v1/notes/${uuid}`, { title: "Bob again" })).status).toBe(200);
    await notice(page).getByText("Changed by Bob Builder a moment ago.").waitFor({ timeout: 5000 });
    page.once("dialog", (d) => void d.dismiss());
    await notice(page).getByRole("button", { name: "Reload" }).click();
    expect(await page.locator('[data-field="title"] input').inputValue()).toBe("My edit");
    page.once("dialog", (d) => void d.accept());
    await notice(page).getByRole("button", { name: "Reload" }).click();
    await until(page, `document.querySelector('[data-field="title"] input')?.value === "Bob again"`);

    // Keep editing: the notice goes, the edits stay.
    await page.locator('[data-field="title"] input').fill("Mine");
    expect((await bob("PUT", `/api/v1/notes/${uuid}`, { year: 1 })).status).toBe(200);
    await notice(page).getByRole("button", { name: "Keep editing" }).click();
    expect((await notice(page).textContent())?.trim()).toBe("");
    expect(await page.locator('[data-field="title"] input').inputValue()).toBe("Mine");

    // Deleted by someone else: said so.
    expect((await bob("DELETE", `/api/v1/notes/${uuid}`)).status).toBe(200);
    await notice(page).getByText("Deleted by Bob Builder a moment ago.").waitFor({ timeout: 5000 });
    await page.context().close();
  }, 60_000);

  test("a save over a newer version asks first: Cancel keeps the edits and writes nothing, Overwrite writes them", async () => {
    const uuid = await create({ title: "Original", status: "new" });
    const page = await form(uuid);
    await page.locator('[data-field="title"] input').fill("A's title");
    expect((await bob("PUT", `/api/v1/notes/${uuid}`, { title: "B's title" })).status).toBe(200);
    await page.getByRole("button", { name: "Save" }).click();

    const dialog = page.locator("dialog[open]");
    await dialog.waitFor({ timeout: 5000 });
    expect(await dialog.textContent()).toContain("This record was changed by Bob Builder since you opened it.");
    expect((await stored(uuid)).title).toBe("B's title");
    await expectNoAxeViolations(page, "the dialog asking before a save over a newer version");

    await dialog.getByRole("button", { name: "Cancel" }).click();
    await dialog.waitFor({ state: "detached" });
    expect(await page.locator('[data-field="title"] input').inputValue()).toBe("A's title");
    expect((await stored(uuid)).title).toBe("B's title");

    await page.getByRole("button", { name: "Save" }).click();
    await dialog.waitFor({ timeout: 5000 });
    await dialog.getByRole("button", { name: "Overwrite" }).click();
    await page.getByText("Saved.").waitFor();
    expect((await stored(uuid)).title).toBe("A's title");
    expect((await stored(uuid))._modified_by).not.toBe(bobUuid);

    // The form now holds the saved version: the next save needs no asking.
    await page.locator('[data-field="title"] input').fill("A's second title");
    await page.getByRole("button", { name: "Save" }).click();
    await until(page, `document.querySelector('form.fields [role="status"]')?.textContent === "Saved." && document.querySelector('[data-field="title"] input')?.value === "A's second title"`);
    expect(await page.locator("dialog[open]").count()).toBe(0);
    expect((await stored(uuid)).title).toBe("A's second title");

    // Reload in the dialog shows the other version.
    await page.locator('[data-field="title"] input').fill("A's third title");
    expect((await bob("PUT", `/api/v1/notes/${uuid}`, { title: "B's second title" })).status).toBe(200);
    await page.getByRole("button", { name: "Save" }).click();
    await dialog.waitFor({ timeout: 5000 });
    await dialog.getByRole("button", { name: "Reload" }).click();
    await until(page, `document.querySelector('[data-field="title"] input')?.value === "B's second title"`);
    expect((await stored(uuid)).title).toBe("B's second title");
    await page.context().close();
  }, 60_000);
});

test("with realtime off (503) the overview still shows changes made elsewhere: it asks every 5 s instead", async () => {
  const off = await adminSite({ defs: { notes }, env: { RESD_REALTIME_MAX_STREAMS: "0" } });
  try {
    const page = await signedInPage(browser, off.base, "/admin/notes");
    await page.locator("table.records tbody").waitFor();
    await page.getByText("No records match.").waitFor({ timeout: 3000 });
    const r = await off.apiJson("POST", "/api/v1/notes", { title: "Seen by asking" });
    expect(r.status).toBe(201);
    await page.locator(`tr[data-uuid="${Object.keys(r.body!.notes)[0]}"]`).waitFor({ timeout: 8000 });
    await page.context().close();
  } finally {
    await off.cleanup();
  }
}, 60_000);

/**
 * The admin's chat with AI agents (issue 36), in chromium against the real server, whose runs talk
 * to a scripted chat-completions server on 127.0.0.1: an editor asks the agent to change a record
 * and watches the reply stream in, the step it took and a link to the record; the record and its
 * history show the change, made through the agent. Replies that arrive with the panel closed raise
 * the unread badge; a failed run shows its error; without the event stream the panel asks again
 * every 2 s. A user without chat-<agent> sees no chat at all.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { adminSite } from "./helpers/site";
import { fakeAi } from "./helpers/fake-ai";
import { expectNoAxeViolations } from "./helpers/axe";

const notes = {
  name: { singular: "Note", plural: "Notes" },
  fields: { title: { type: "text", required: true }, status: { type: "select", options: { new: "New", done: "Done" } } },
};

const ai = fakeAi();
let s: Awaited<ReturnType<typeof adminSite>>;
let browser: Browser;

async function userWith(name: string, permissions: string[]): Promise<void> {
  const role = await s.apiJson("POST", "/api/v1/roles", { name, permissions });
  expect(role.status).toBe(201);
  const user = await s.apiJson("POST", "/api/v1/users", { email: `${name}@example.com`, password: `${name}-password-1`, role: Object.keys(role.body!.roles)[0] });
  expect(user.status).toBe(201);
}

beforeAll(async () => {
  s = await adminSite({
    defs: { notes },
    // One attempt per run: a provider's refusal is the run's failure at once, not after retries.
    env: { AI_API_KEY: "x", AI_BASE_URL: ai.base, AI_MODEL: "fake", RESD_JOB_POLL: "50", RESD_JOB_ATTEMPTS: "1" },
  });
  expect((await s.apiJson("POST", "/api/v1/notes/n1", { title: "Draft", status: "new" })).status).toBe(201);
  await userWith("editor", ["chat-resd", "agent-act", "view-notes", "edit-notes"]);
  await userWith("plain", ["view-notes", "edit-notes", "agent-act"]);
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await s?.cleanup();
  ai.stop();
});

/** Each user's session right after their first sign-in through the form. */
const sessions = new Map<string, Awaited<ReturnType<BrowserContext["storageState"]>>>();

/** A page at `path` signed in as `name` (through the sign-in form the first time). */
async function signedIn(name: string, path: string): Promise<Page> {
  const kept = sessions.get(name);
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, ...(kept ? { storageState: kept } : {}) });
  const page = await context.newPage();
  page.on("close", () => void context.close().catch(() => {}));
  page.on("pageerror", (e) => console.error("pageerror:", e.message));
  page.on("dialog", (d) => void d.accept());
  if (kept) {
    await page.goto(s.base + path);
  } else {
    await page.goto(`${s.base}/admin/sign-in?next=${encodeURIComponent(path)}`);
    await page.getByLabel("E-mail").fill(`${name}@example.com`);
    await page.getByLabel("Password").fill(`${name}-password-1`);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL((u) => u.pathname === path);
    sessions.set(name, await page.context().storageState());
  }
  await page.waitForURL((u) => u.pathname === path);
  // Signed in: the top bar names the user.
  await page.locator("header.topbar .who").filter({ hasText: `${name}@example.com` }).waitFor();
  return page;
}

const chatButton = (page: Page) => page.locator("header.topbar").getByRole("button", { name: /^Assistant/ });
const panel = (page: Page) => page.locator("dialog.drawer[open]");
const stored = async (uuid: string) => (await s.apiJson("GET", `/api/v1/notes/${uuid}`)).body!.notes[uuid] as Record<string, unknown>;

/** Opens the panel and starts a new conversation; the text box is focused. */
async function newConversation(page: Page) {
  await chatButton(page).click();
  await panel(page).getByRole("button", { name: "New conversation" }).click();
  const box = panel(page).getByRole("textbox", { name: "Message" });
  await box.waitFor();
  return box;
}

describe("the chat panel", () => {
  test("an editor asks the agent to change a record: the reply streams in, the step and a link to the record show; the record and its history show the change through agent resd", async () => {
    // Both answers are held: the tool call until the page follows the conversation (what a run
    // does before the stream is open is not told again: the view names it, without a link), the
    // reply after its first piece.
    let releaseTools!: () => void;
    let release!: () => void;
    const toolsHeld = new Promise<void>((resolve) => (releaseTools = resolve));
    const held = new Promise<void>((resolve) => (release = resolve));
    ai.script(
      { tools: [{ name: "update_record", arguments: { resource: "notes", uuid: "n1", changes: { status: "done" } } }], pause: toolsHeld },
      { text: "I marked the note Draft as done.", pause: held },
    );
    const page = await signedIn("editor", "/admin/notes");
    await page.locator('tr[data-uuid="n1"]').waitFor();
    await chatButton(page).waitFor();
    const box = await newConversation(page);
    const drawer = panel(page);

    // Typing @ offers the agents the editor may ask; Enter picks the one offered.
    await box.pressSequentially("@");
    const mentions = drawer.getByRole("list", { name: "Agents to mention" });
    // The agents come with the conversation list, or with the new conversation when it is first.
    await mentions.getByRole("button").first().waitFor();
    expect(await mentions.getByRole("button").allTextContents()).toEqual(["@resd"]);
    await box.press("Enter");
    expect(await box.inputValue()).toBe("@resd ");
    await mentions.waitFor({ state: "detached" });
    await box.pressSequentially("please mark the note Draft as done");
    // Every key went in after the mention, in order (the caret is placed before the next key).
    expect(await box.inputValue()).toBe("@resd please mark the note Draft as done");
    const following = page.waitForResponse((r) => new URL(r.url()).searchParams.get("operation") === "events");
    await box.press("Enter");

    await drawer.locator("li.chat-msg.mine").filter({ hasText: "@resd please mark the note Draft as done" }).waitFor();
    expect(await box.inputValue()).toBe("");
    expect((await following).status()).toBe(200);
    releaseTools();
    // The tool call has run (a line that links to the record) and the reply is coming, held after its first piece.
    const run = drawer.locator("li.chat-msg.working");
    await run.getByRole("link", { name: "updated notes/n1" }).waitFor({ timeout: 10_000 });
    await run.locator(".chat-text").filter({ hasText: "I ma" }).waitFor({ timeout: 10_000 });
    expect(await run.locator(".chat-text").textContent()).toBe("I ma");
    expect(await run.locator(".chat-from").textContent()).toContain("is working…");
    expect((await stored("n1")).status).toBe("done");
    release();

    const reply = drawer.locator('li.chat-msg.agent[data-from="resd"]');
    await reply.locator(".chat-text").filter({ hasText: "I marked the note Draft as done." }).waitFor({ timeout: 10_000 });
    await run.waitFor({ state: "detached" });
    expect(await reply.locator(".chat-from strong").textContent()).toBe("resd");
    expect(await reply.locator(".chat-steps li").allTextContents()).toEqual(["updated notes/n1"]);
    expect(await drawer.locator(".chat-head h3").textContent()).toBe("@resd please mark the note Draft as done");
    await expectNoAxeViolations(page, "the chat panel with a reply");

    // The link leads to the record (the panel closes on the way), which shows the change.
    await reply.getByRole("link", { name: "Open notes/n1" }).click();
    await page.waitForURL((u) => u.pathname === "/admin/notes/n1");
    await page.locator("dialog.drawer").waitFor({ state: "detached" });
    const status = page.locator('[data-field="status"] select');
    await status.waitFor();
    expect(await status.inputValue()).toBe("done");

    // Its history names the agent the change went through.
    await page.goto(`${s.base}/admin/notes`);
    await page.locator('tr[data-uuid="n1"]').getByRole("button", { name: /^Actions/ }).click();
    await page.getByRole("menuitem", { name: "History" }).click();
    const entry = page.locator("dialog[open] li[data-entry]").first();
    await entry.waitFor();
    expect(await entry.locator("p").first().textContent()).toContain("Changed");
    expect(await entry.locator("p").first().textContent()).toContain("by editor@example.com through agent resd");
    expect(await page.locator("dialog[open] li[data-entry]").last().locator("p").first().textContent()).not.toContain("through agent");
    await page.close();
  }, 60_000);

  test("a reply that arrives while the panel is closed shows as unread; the panel opens where it was left; opening the conversation marks it read", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    ai.script({ text: "Three notes are open.", pause: held });
    const page = await signedIn("editor", "/admin/notes");
    const box = await newConversation(page);
    await box.fill("How many notes are open?");
    await box.press("Enter");
    await panel(page).locator("li.chat-msg.working").waitFor();
    // Back to the list, which says the agent is working on it; then the panel is closed there.
    await panel(page).getByRole("button", { name: "← Conversations" }).click();
    const waiting = panel(page).locator("li[data-conversation]").filter({ hasText: "How many notes are open?" });
    expect(await waiting.locator(".chat-waiting").textContent()).toBe("working…");
    await page.keyboard.press("Escape");
    await page.locator("dialog.drawer").waitFor({ state: "detached" });
    // Working: the button says so.
    await chatButton(page).filter({ hasText: "an agent is working" }).waitFor({ timeout: 10_000 });
    release();
    await chatButton(page).filter({ hasText: "1 unread reply" }).waitFor({ timeout: 15_000 });
    expect(await chatButton(page).locator(".badge").textContent()).toBe("1");

    await chatButton(page).click();
    const item = panel(page).locator("li[data-conversation]").filter({ hasText: "How many notes are open?" });
    expect(await item.locator(".badge").textContent()).toBe("1 unread");
    expect(await item.textContent()).toContain("resd: Three notes are open.");
    // Last changed a moment ago (the list counts seconds, a message milliseconds).
    expect(Math.abs(Date.parse((await item.locator("time").getAttribute("datetime"))!) - Date.now())).toBeLessThan(60_000);
    await item.locator("button.chat-pick").click();
    await panel(page).locator('li.chat-msg.agent[data-from="resd"]').filter({ hasText: "Three notes are open." }).waitFor();
    await chatButton(page).locator(".badge").waitFor({ state: "detached", timeout: 5000 });
    const unread = await page.request.get(`${s.base}/api/v1/agent-chat?operation=unread`);
    expect(await unread.json()).toMatchObject({ unread: 0, waiting: 0 });
    await page.close();
  }, 60_000);

  test("a failed run shows its error; a conversation can be deleted", async () => {
    ai.script({ status: 400 });
    const page = await signedIn("editor", "/admin/notes");
    const box = await newConversation(page);
    // A mention picked in the middle of the text: the caret lands right after it, and the next key
    // goes there even when frames come late (a loaded machine: here each frame waits 300 ms).
    await box.fill("please help");
    await box.press("Home");
    await page.evaluate("(() => { const frame = requestAnimationFrame.bind(window); window.requestAnimationFrame = (cb) => (setTimeout(() => frame(cb), 300), 0); })()");
    await box.pressSequentially("@");
    await panel(page).getByRole("list", { name: "Agents to mention" }).getByRole("button").first().waitFor();
    await box.press("Enter");
    await box.pressSequentially("xy");
    await Bun.sleep(400);
    expect(await box.inputValue()).toBe("@resd xyplease help");
    await box.fill("This will fail");
    await box.press("Enter");
    const failed = panel(page).locator("li.chat-msg.failed");
    await failed.waitFor({ timeout: 10_000 });
    expect(await failed.textContent()).toContain("No reply: the AI provider answered HTTP 400");
    await expectNoAxeViolations(page, "the chat panel with a failed run");

    // Back to the list: delete it there (the confirmation is accepted).
    await panel(page).getByRole("button", { name: "← Conversations" }).click();
    const item = panel(page).locator("li[data-conversation]").filter({ hasText: "This will fail" });
    await item.waitFor();
    const uuid = (await item.getAttribute("data-conversation"))!;
    await item.getByRole("button", { name: "Delete the conversation “This will fail”" }).click();
    await item.waitFor({ state: "detached" });
    expect(await panel(page).locator("li[data-conversation]").count()).toBeGreaterThan(0);
    await page.close();
    // Gone on the server too.
    const again = await signedIn("editor", "/admin/notes");
    await chatButton(again).click();
    await panel(again).locator("li[data-conversation]").first().waitFor();
    expect(await panel(again).locator(`li[data-conversation="${uuid}"]`).count()).toBe(0);
    await again.close();
  }, 60_000);

  test("without the event stream the panel asks for the conversation every 2 s until the reply is there", async () => {
    ai.script(
      { tools: [{ name: "update_record", arguments: { resource: "notes", uuid: "n1", changes: { title: "Draft, reviewed" } } }] },
      { text: "Renamed it." },
    );
    const page = await signedIn("editor", "/admin/notes");
    // The stream cannot be opened (a proxy that cuts it, say): EventSource fails.
    await page.route((u) => u.pathname === "/api/v1/agent-chat" && u.searchParams.get("operation") === "events", (r) => r.abort());
    const gets: number[] = [];
    page.on("request", (r) => {
      if (r.method() === "POST" && new URL(r.url()).pathname === "/api/v1/agent-chat" && JSON.parse(r.postData() ?? "{}").operation === "get") gets.push(Date.now());
    });
    const box = await newConversation(page);
    await box.fill("Rename the note Draft");
    await box.press("Enter");
    const reply = panel(page).locator('li.chat-msg.agent[data-from="resd"]').filter({ hasText: "Renamed it." });
    await reply.waitFor({ timeout: 15_000 });
    expect(gets.length).toBeGreaterThan(0);
    expect(await reply.locator(".chat-steps li").allTextContents()).toEqual(["updated notes/n1"]);
    expect(await reply.getByRole("link", { name: "Open notes/n1" }).count()).toBe(1);
    // Done: no more asking.
    const seen = gets.length;
    await Bun.sleep(2500);
    expect(gets.length).toBe(seen);
    expect((await stored("n1")).title).toBe("Draft, reviewed");
    await page.close();
  }, 60_000);
});

test("a user without chat-<agent> sees no chat button, and the admin does not even ask", async () => {
  const page = await signedIn("plain", "/admin/notes");
  const asked: string[] = [];
  page.on("request", (r) => { if (new URL(r.url()).pathname === "/api/v1/agent-chat") asked.push(r.url()); });
  await page.reload();
  await page.locator('tr[data-uuid="n1"]').waitFor();
  await page.locator("header.topbar .who").filter({ hasText: "plain@example.com" }).waitFor();
  expect(await chatButton(page).count()).toBe(0);
  expect(asked).toEqual([]);
  // The server refuses it too.
  const res = await page.request.get(`${s.base}/api/v1/agent-chat?operation=unread`);
  expect(res.status()).toBe(403);
  expect(await res.json()).toMatchObject({ message: "ACCESS_DENIED" });
  await page.close();
}, 60_000);

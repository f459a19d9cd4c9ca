/** Signing in and waiting in the admin pages, under their Content-Security-Policy. */
import type { Browser, Page } from "playwright-core";

/**
 * Waits until an expression (a promise's result included) is true in the page. Not
 * page.waitForFunction: given a string it evaluates it again in the page on every poll, which the
 * admin's policy refuses (no 'unsafe-eval'); each page.evaluate is one DevTools evaluation, which no
 * page policy governs.
 */
export async function until(page: Page, expression: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await page.evaluate(expression))) {
    if (Date.now() > deadline) throw new Error(`still false after ${timeoutMs} ms: ${expression}`);
    await Bun.sleep(50);
  }
}

/** A new page signed in as the test site's admin, at `path` of the admin pages. */
export async function signedInPage(browser: Browser, base: string, path: string, viewport = { width: 1280, height: 800 }): Promise<Page> {
  const page = await browser.newPage({ viewport });
  page.on("pageerror", (e) => console.error("pageerror:", e.message));
  await page.goto(`${base}/admin/sign-in?next=${encodeURIComponent(path)}`);
  await page.getByLabel("E-mail").fill("admin@example.com");
  await page.getByLabel("Password").fill("admin-password");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL((u) => u.pathname === path.split("?")[0]);
  return page;
}

type SignIn = Awaited<ReturnType<Awaited<ReturnType<Browser["newContext"]>>["storageState"]>>;
const signIns = new WeakMap<Browser, Map<string, Promise<SignIn>>>();

/**
 * signedInPage, signing in once per browser and site: the first call signs in through the form
 * (as signedInPage does) and keeps that context's cookies and storage as they were right after the
 * sign-in; later calls open `path` in a new context holding them, skipping the sign-in page and its
 * password check. Each page still has a context of its own (closed with the page). Should the kept
 * session no longer let the page in (signed out, expired), it signs in through the form again.
 */
export async function sessionPage(browser: Browser, base: string, path: string, viewport = { width: 1280, height: 800 }): Promise<Page> {
  if (!signIns.has(browser)) signIns.set(browser, new Map());
  const sites = signIns.get(browser)!;
  const kept = sites.get(base);
  if (kept) {
    const state = await kept.catch(() => null);
    if (state) {
      const context = await browser.newContext({ storageState: state, viewport });
      const page = await context.newPage();
      page.on("close", () => void context.close().catch(() => {}));
      page.on("pageerror", (e) => console.error("pageerror:", e.message));
      await page.goto(`${base}${path}`);
      if (new URL(page.url()).pathname === path.split("?")[0]) return page;
      await page.close();
    }
  }
  const page = await signedInPage(browser, base, path, viewport);
  const state = page.context().storageState();
  sites.set(base, state);
  await state;
  return page;
}

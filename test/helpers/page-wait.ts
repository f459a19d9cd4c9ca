/** Waiting in the admin pages, under their Content-Security-Policy. */
import type { Page } from "playwright-core";

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

// Hand check of the Swagger page in a real browser (Debian's chromium + playwright-core, not a CI
// dependency): a visitor without a session gets the sign-in form, a wrong password a message, the
// right one the caller's API. Screenshots go to /tmp/resd-swagger-*.png.
//   apt-get install -y chromium && bun add -d playwright-core   (or install it in a scratch folder)
//   bun bench/ui/swagger-check.mjs
import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium } from "playwright-core";

const main = resolve(import.meta.dir, "../../cli/main.ts");
const dir = mkdtempSync(join(tmpdir(), "resd-ui-"));
mkdirSync(join(dir, "resources"));
writeFileSync(join(dir, "resources/notes.json"), JSON.stringify({ fields: { title: { type: "text", required: true } } }));
Bun.spawnSync(["bun", main, "user", "add", "ui@example.com", "--password", "ui-password", "--role", "admin", "--dir", dir]);
const server = Bun.spawn(["bun", main, "serve", "--dir", dir, "--port", "3380", "--host", "127.0.0.1"], { stdout: "ignore", stderr: "inherit" });
for (let i = 0; i < 100 && !(await fetch("http://127.0.0.1:3380/health").then((r) => r.ok, () => false)); i++) await Bun.sleep(50);
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"] });
try {
  const page = await browser.newPage();
  await page.goto("http://127.0.0.1:3380/swagger");
  await page.waitForSelector("#signin:not([hidden])");
  await page.screenshot({ path: "/tmp/resd-swagger-signin.png" });
  await page.fill('input[name="email"]', "ui@example.com");
  await page.fill('input[name="password"]', "wrong");
  await page.click("button");
  await page.waitForFunction(() => document.querySelector("output").textContent.length > 0);
  console.log("wrong password:", await page.textContent("output"));
  await page.fill('input[name="password"]', "ui-password");
  await page.click("button");
  await page.waitForSelector(".opblock-tag", { timeout: 15000 });
  console.log("operations for:", (await page.$$eval(".opblock-tag", (els) => els.map((e) => e.getAttribute("data-tag")))).join(", "));
  await page.screenshot({ path: "/tmp/resd-swagger-ui.png" });
  console.log("swagger page: OK");
} finally {
  await browser.close();
  server.kill();
}

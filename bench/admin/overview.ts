// The admin overview of a 1,000,000-record resource in Debian's chromium: time from navigation to
// the first page of rows on screen, cold (first visit, app not cached) and warm (app cached), and
// how often the app's script is fetched. Seed first with bench/records/seed.ts.
//   bun bench/records/seed.ts /tmp/bench-data/resd-site 1000000
//   bun bench/admin/overview.ts [/tmp/bench-data/resd-site]
import { chromium } from "playwright-core";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");
const dir = process.argv[2] ?? "/tmp/bench-data/resd-site";
const run = (args: string[]) => Bun.spawnSync(["bun", join(ROOT, "cli/main.ts"), ...args, "--dir", dir], { stderr: "pipe" });
run(["user", "add", "bench-admin@example.com", "--password", "bench-password", "--role", "admin"]);
const proc = Bun.spawn(["bun", join(ROOT, "cli/main.ts"), "serve", "--dir", dir, "--port", "0", "--host", "127.0.0.1"], { env: { ...process.env, RESD_LOG_FORMAT: "text" }, stdout: "pipe", stderr: "inherit" });
let out = "";
void (async () => { for await (const c of proc.stdout as ReadableStream<Uint8Array>) out += new TextDecoder().decode(c); })();
let base = "";
for (let i = 0; !base && i < 500; i++) { base = /listening on (http:\/\/\S+)/.exec(out)?.[1] ?? ""; await Bun.sleep(20); }

const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
const page = await browser.newPage();
await page.goto(`${base}/admin/sign-in`);
await page.getByLabel("E-mail").fill("bench-admin@example.com");
await page.getByLabel("Password").fill("bench-password");
await page.getByRole("button", { name: "Sign in" }).click();
await page.waitForURL((u) => u.pathname === "/admin");

const times: number[] = [];
for (let i = 0; i < 5; i++) {
  const t0 = performance.now();
  await page.goto(`${base}/admin/items?page=${1 + i * 1000}`);
  await page.waitForSelector("tbody tr[data-uuid]");
  times.push(performance.now() - t0);
}
// Requests that reached the server (the log), not answers from the browser's cache.
const scripts = out.split("\n").filter((l) => /\/admin\/assets\/main-\w+\.js/.test(l)).length;
const total = await page.locator(".total").getAttribute("data-total");
console.log(`overview of ${total} records: first page on screen after ${times.map((t) => t.toFixed(0)).join(", ")} ms (full page loads, 5 pages); script requested from the server ${scripts} time(s) over 6 page loads`);
await browser.close();
proc.kill("SIGTERM");
await proc.exited;

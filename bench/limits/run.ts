// Memory and time bounds under hostile requests (issue "hostile input"), against the real server:
//  1. sitemap: 6 parallel /sitemap.xml requests, each with a different Host header, while /health
//     is polled every 10 ms — the worst /health latency, and whether a Host reached <loc>;
//  2. cache: 10,000 list requests of a small resource with distinct 12 KB filter values and 200-character searches (16 at a time) — the server's
//     resident memory before and after.
// Bounded: 100k seeded records, 10k requests, each phase stops after 120 s.
//   bun bench/limits/run.ts [RECORDS]
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { loadConfig } from "../../src/core/config";
import { openSite } from "../../src/core/open-site";

const ROOT = resolve(import.meta.dir, "../..");
const COUNT = Number(process.argv[2] ?? 100_000);
const dir = mkdtempSync(join(tmpdir(), "resd-bench-limits-"));
mkdirSync(join(dir, "resources"), { recursive: true });
writeFileSync(join(dir, "resources/pages.json"), JSON.stringify({
  fields: { title: { type: "text" }, slug: { type: "text" }, summary: { type: "textarea" }, body: { type: "textarea" } },
  sitemap: { url: "/p/[#record.slug#]" },
}));
writeFileSync(join(dir, "resources/notes.json"), JSON.stringify({
  fields: { title: { type: "text" }, a: { type: "text" }, b: { type: "text" }, c: { type: "text" }, d: { type: "text" } },
}));
mkdirSync(join(dir, "ext/uri/api/v1/notes"), { recursive: true });
writeFileSync(join(dir, "ext/uri/api/v1/notes/index.tpl"), "[#api-allow get notes#]\n");
// Anyone may list pages: the bench measures the server, not sign-in.
mkdirSync(join(dir, "ext/uri/api/v1/pages"), { recursive: true });
writeFileSync(join(dir, "ext/uri/api/v1/pages/index.tpl"), "[#api-allow get pages#]\n");

{
  const site = await openSite(loadConfig({ dir }));
  for (let b = 0; b < COUNT; b += 10_000) {
    await site.store.transaction(async (tx) => {
      for (let i = b; i < Math.min(COUNT, b + 10_000); i++) {
        const data = { title: `Page ${i}`, slug: `page-${i}`, summary: `Summary of page ${i}`, body: `Body text of page ${i}` };
        await tx.insert("pages", { uuid: crypto.randomUUID(), data: JSON.stringify(data), _created: 1_700_000_000 + i, _modified: 1_700_000_000 + i, _created_by: null, _modified_by: null });
      }
    });
  }
  await site.store.transaction(async (tx) => {
    for (let i = 0; i < 20; i++) await tx.insert("notes", { uuid: crypto.randomUUID(), data: JSON.stringify({ title: `Note ${i}`, a: "a", b: "b", c: "c", d: "d" }), _created: 1_700_000_000, _modified: 1_700_000_000, _created_by: null, _modified_by: null });
  });
  await site.close();
}

const proc = Bun.spawn(["bun", join(ROOT, "cli/main.ts"), "serve", "--dir", dir, "--port", "0", "--host", "127.0.0.1"], {
  cwd: dir, env: { ...process.env, RESD_LOG_FORMAT: "text" }, stdout: "pipe", stderr: "inherit",
});
let out = "";
void (async () => { for await (const c of proc.stdout as ReadableStream<Uint8Array>) out += new TextDecoder().decode(c); })();
let base = "";
for (let t = 0; !base && t < 1000; t++) { base = /listening on (http:\/\/\S+)/.exec(out)?.[1] ?? ""; await Bun.sleep(20); }
const { port } = new URL(base);
const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${proc.pid}/status`, "utf8"))![1]) / 1024;

/** A raw HTTP/1.1 GET with the Host header we choose (fetch would set its own). */
async function rawGet(path: string, host: string): Promise<string> {
  return new Promise((done, fail) => {
    let text = "";
    Bun.connect({ hostname: "127.0.0.1", port: Number(port), socket: {
      open(s) { s.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`); },
      data(_s, d) { text += new TextDecoder().decode(d); },
      close() { done(text); },
      error(_s, e) { fail(e); },
    } }).catch(fail);
  });
}

// 1. Sitemap with varying Host.
await fetch(`${base}/health`);
let worst = 0;
let polling = true;
const poller = (async () => {
  while (polling) {
    const t = performance.now();
    await fetch(`${base}/health`);
    worst = Math.max(worst, performance.now() - t);
    await Bun.sleep(10);
  }
})();
const t0 = performance.now();
const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => rawGet("/sitemap.xml", `attacker-${i}.example`)));
const sitemapMs = performance.now() - t0;
polling = false;
await poller;
const leaked = answers.some((a) => a.includes("attacker-"));
const urls = (answers[0].match(/<loc>/g) ?? []).length;
console.log(`sitemap: ${COUNT} records, 6 parallel requests with different Host in ${sitemapMs.toFixed(0)} ms; worst /health ${worst.toFixed(0)} ms; <loc> entries ${urls}; attacker Host in <loc>: ${leaked ? "yes" : "no"}`);

// 2. Cache keys with large searches.
const before = rss();
let sent = 0;
let peak = before;
const deadline = Date.now() + 120_000;
const pad = "x".repeat(12 * 1024);
const statuses: Record<number, number> = {};
async function worker() {
  while (sent < 10_000 && Date.now() < deadline) {
    const n = sent++;
    // Searches are capped at 200 characters; filter values are not, so they carry the 12 KB.
    const r = await fetch(`${base}/api/v1/notes?limit=5&filter=title:${n}${pad}&search=${n}${pad.slice(0, 190)}`);
    statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    await r.arrayBuffer();
    if (n % 500 === 0) peak = Math.max(peak, rss());
  }
}
const t1 = performance.now();
await Promise.all(Array.from({ length: 16 }, worker));
peak = Math.max(peak, rss());
console.log(`cache: ${sent} list requests with 12 KB filter values (statuses ${JSON.stringify(statuses)}) in ${((performance.now() - t1) / 1000).toFixed(1)} s; RSS ${before.toFixed(0)} MB before, peak ${peak.toFixed(0)} MB, ${rss().toFixed(0)} MB after`);

proc.kill("SIGTERM");
await proc.exited;
rmSync(dir, { recursive: true, force: true });

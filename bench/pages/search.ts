// The link dialog's search as the user types: p50/p99 of `GET /api/v1/.pages?search=…&limit=20`
// through the real server, on a site of COUNT record pages (default 100,000), with varied terms
// (one letter to whole titles, misses, URL fragments, typing a word letter by letter). Then the
// same while another client updates records (the index follows each write incrementally), and the
// first request's cost (the index is built on first use).
//   bun bench/pages/search.ts [COUNT] [SITE_DIR]
// With RESD_DATABASE_URL the site's records are in that PostgreSQL database.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { loadConfig } from "../../src/core/config";
import { openSite } from "../../src/core/open-site";

const ROOT = resolve(import.meta.dir, "../..");
const count = Number(process.argv[2] ?? 100_000);
const given = process.argv[3];
const dir = given ?? mkdtempSync(join(tmpdir(), "resd-bench-pages-"));
const ROUNDS = Number(process.env.ROUNDS ?? 20);

const WORDS = ["berlin", "garden", "river", "music", "summer", "winter", "market", "school", "coffee", "mountain", "harbour", "library", "theatre", "station", "bridge", "forest"];
const titleOf = (i: number) => `${WORDS[i % 16]} ${WORDS[(i * 7 + 3) % 16]} story ${i}`;
const slugOf = (i: number) => titleOf(i).replace(/ /g, "-");

mkdirSync(join(dir, "resources"), { recursive: true });
writeFileSync(join(dir, "resources/posts.json"), JSON.stringify({
  fields: { title: { type: "text", required: true }, slug: { type: "text" }, published: { type: "boolean" }, body: { type: "textarea", admin_col: false } },
  sitemap: { url: "/posts/[#record.slug#]", published: "published" },
}));
mkdirSync(join(dir, "ext/uri/api/v1/posts"), { recursive: true });
writeFileSync(join(dir, "ext/uri/api/v1/posts/index.tpl"), "[#api-allow get posts#]\n");

const site = await openSite(loadConfig({ dir }));
const have = await site.store.count("posts", { where: "", args: [] });
const t0 = performance.now();
for (let b = have; b < count; b += 10_000) {
  await site.store.transaction(async (tx) => {
    for (let i = b; i < Math.min(count, b + 10_000); i++) {
      const now = 1_700_000_000 + i;
      const data = { title: titleOf(i), slug: slugOf(i), published: i % 5 !== 0, body: `Body of post ${i}.` };
      await tx.insert("posts", { uuid: crypto.randomUUID(), data: JSON.stringify(data), _created: now, _modified: now, _created_by: null, _modified_by: null });
    }
  }, { alone: true });
}
const total = await site.store.count("posts", { where: "", args: [] });
await site.close();
if (count > have) console.log(`seeded ${count - have} records in ${((performance.now() - t0) / 1000).toFixed(1)} s (${total} in all)`);

const cli = (args: string[]) => Bun.spawnSync(["bun", join(ROOT, "cli/main.ts"), ...args, "--dir", dir], { stderr: "pipe" });
cli(["user", "add", "bench-pages@example.com", "--password", "bench-password", "--role", "admin", "--api"]);
const token = cli(["token", "bench-pages@example.com"]).stdout.toString().trim();
const proc = Bun.spawn(["bun", join(ROOT, "cli/main.ts"), "serve", "--dir", dir, "--port", "0", "--host", "127.0.0.1"], { env: { ...process.env, RESD_LOG_FORMAT: "text", RESD_LOG_REQUESTS: "0" }, stdout: "pipe", stderr: "inherit" });
let out = "";
void (async () => { for await (const c of proc.stdout as ReadableStream<Uint8Array>) out += new TextDecoder().decode(c); })();
let base = "";
for (let i = 0; !base && i < 1000; i++) { base = /listening on (http:\/\/\S+)/.exec(out)?.[1] ?? ""; await Bun.sleep(20); }
const headers = { authorization: `Bearer ${token}` };

async function timed(term: string): Promise<{ ms: number; total: number }> {
  const t = performance.now();
  const res = await fetch(`${base}/api/v1/.pages?search=${encodeURIComponent(term)}&limit=20`, { headers });
  const body = (await res.json()) as { total: number; code: number };
  if (body.code !== 200) throw new Error(`search ${term}: ${JSON.stringify(body)}`);
  return { ms: performance.now() - t, total: body.total };
}

const first = await timed("berlin");
console.log(`first request (builds the index of ${total} records): ${first.ms.toFixed(0)} ms`);

const typed = (w: string) => Array.from({ length: w.length }, (_, i) => w.slice(0, i + 1));
const TERMS = [
  ...typed("library"), ...typed("harbour-st"), "s", "e", "/posts/", "story", "story 4", "story 12345", "99999", "Coffee Forest",
  "winter-market", "GARDEN", "nothing-like-this", "zzz", "x", "theatre station story 7", "ü",
];
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const report = (label: string, ms: number[]) => console.log(`${label}: ${ms.length} requests, p50 ${pct(ms, 50).toFixed(2)} ms, p99 ${pct(ms, 99).toFixed(2)} ms, max ${Math.max(...ms).toFixed(2)} ms`);

async function run(): Promise<{ all: number[]; byTerm: Map<string, { ms: number[]; total: number }> }> {
  const all: number[] = [];
  const byTerm = new Map<string, { ms: number[]; total: number }>();
  for (let r = 0; r < ROUNDS; r++) {
    for (const term of TERMS) {
      const { ms, total: n } = await timed(term);
      all.push(ms);
      const t = byTerm.get(term) ?? { ms: [], total: n };
      t.ms.push(ms);
      byTerm.set(term, t);
    }
  }
  return { all, byTerm };
}

await run(); // warm-up
const quiet = await run();
report(`search, ${total} record pages, ${TERMS.length} terms × ${ROUNDS} rounds, one client`, quiet.all);
const slowest = [...quiet.byTerm].map(([t, v]) => [t, pct(v.ms, 50), v.total] as const).sort((a, b) => b[1] - a[1]).slice(0, 5);
console.log(`slowest terms (p50, matches): ${slowest.map(([t, ms, n]) => `"${t}" ${ms.toFixed(2)} ms (${n})`).join(", ")}`);

// The same while another client updates a record every 20 ms (about 50 writes a second).
const ids = Object.values(((await (await fetch(`${base}/api/v1/posts?limit=500`, { headers })).json()) as { posts: Record<string, { uuid: string }> }).posts).map((p) => p.uuid);
let writing = true;
let writes = 0;
const writer = (async () => {
  while (writing) {
    const uuid = ids[writes % ids.length];
    await fetch(`${base}/api/v1/posts/${uuid}`, { method: "PUT", headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify({ title: `renamed ${writes} coffee`, slug: `renamed-${writes}` }) });
    writes++;
    await Bun.sleep(20);
  }
})();
const busy = await run();
writing = false;
await writer;
report(`search while another client updates records (${writes} updates)`, busy.all);
const check = await timed(`renamed-${writes - 1}`);
console.log(`the last update is found at once: ${check.total === 1}`);

proc.kill("SIGTERM");
await proc.exited;
if (!given) rmSync(dir, { recursive: true, force: true });

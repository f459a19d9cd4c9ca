// One caller's slow lists against another caller's cheap ones (issue 31, item 4), on the real
// server at 127.0.0.1:
//   1. B alone: cheap lists (a filter no index serves on a 20-record resource, so each runs on a
//      read worker; distinct values, so none is cached), one after another;
//   2. A floods: 8 loops, each asking a page sorted on a field without an index (every record is
//      sorted: ~0.8 s here) again as soon as the last answered (after a 429: 50 ms later, ignoring
//      Retry-After), while B asks the same cheap lists as in 1.
// Prints B's p50/p99/max in both phases and what A got. Bounded: RECORDS records, SAMPLES lists
// of B per phase, each phase stops after 60 s.
//   bun bench/limits/fairness.ts [RECORDS] [SAMPLES]
// Extra server settings come from the environment (e.g. RESD_MAX_QUERIES_PER_CALLER=0).
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");
const MAIN = join(ROOT, "cli/main.ts");
const RECORDS = Number(process.argv[2] ?? 150_000);
const SAMPLES = Number(process.argv[3] ?? 40);
const FLOOD = 8;
const PHASE_MS = 60_000;

const dir = mkdtempSync(join(tmpdir(), "resd-bench-fair-"));
mkdirSync(join(dir, "resources"));
writeFileSync(join(dir, "resources/items.json"), JSON.stringify({ fields: { title: { type: "text" }, body: { type: "text" } } }));
writeFileSync(join(dir, "resources/tiny.json"), JSON.stringify({ fields: { title: { type: "text" } } }));

async function cli(args: string[]): Promise<string> {
  const p = Bun.spawn(["bun", MAIN, ...args, "--dir", dir], { cwd: dir, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`resd ${args.join(" ")}: ${err}`);
  return out.trim();
}

const lines = ["title,body"];
for (let i = 0; i < RECORDS; i++) lines.push(`t${i},b${(i * 7919) % RECORDS} lorem ipsum`);
writeFileSync(join(dir, "items.csv"), `${lines.join("\n")}\n`);
writeFileSync(join(dir, "tiny.csv"), `title\n${Array.from({ length: 20 }, (_, i) => `tiny ${i}`).join("\n")}\n`);
await cli(["import", "items", join(dir, "items.csv"), "--no-match"]);
await cli(["import", "tiny", join(dir, "tiny.csv"), "--no-match"]);
const tokens: string[] = [];
for (const who of ["a", "b"]) {
  await cli(["user", "add", `${who}@example.com`, "--password", `${who}-bench-password`, "--role", "admin", "--api"]);
  tokens.push(await cli(["token", `${who}@example.com`]));
}
const [tokenA, tokenB] = tokens;

const proc = Bun.spawn(["bun", MAIN, "serve", "--dir", dir, "--port", "0", "--host", "127.0.0.1"], {
  cwd: dir, env: { ...process.env, RESD_LOG_FORMAT: "text" }, stdout: "pipe", stderr: "inherit",
});
let out = "";
void (async () => { for await (const c of proc.stdout as ReadableStream<Uint8Array>) out += new TextDecoder().decode(c); })();
let base = "";
for (let t = 0; !base && t < 1000; t++) { base = /listening on (http:\/\/\S+)/.exec(out)?.[1] ?? ""; await Bun.sleep(20); }
if (!base) throw new Error("the server did not start");

let n = 0;
const slowPage = () => `/api/v1/items?limit=5&sort=body|text|asc&offset=${RECORDS / 2 + n++}`;
const cheapList = () => `/api/v1/tiny?limit=5&filter=title:${crypto.randomUUID()}`;
async function get(path: string, token: string): Promise<{ status: number; ms: number }> {
  const t = performance.now();
  const res = await fetch(base + path, { headers: { authorization: `Bearer ${token}` } });
  await res.arrayBuffer();
  return { status: res.status, ms: performance.now() - t };
}
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const show = (xs: number[]) => `p50 ${pct(xs, 50).toFixed(1)} ms, p99 ${pct(xs, 99).toFixed(1)} ms, max ${Math.max(...xs).toFixed(1)} ms (${xs.length} lists)`;

async function bLists(): Promise<number[]> {
  const ms: number[] = [];
  const end = performance.now() + PHASE_MS;
  while (ms.length < SAMPLES && performance.now() < end) {
    const r = await get(cheapList(), tokenB);
    if (r.status !== 200) throw new Error(`B got ${r.status}`);
    ms.push(r.ms);
  }
  return ms;
}

// Warm both workers' caches, then time one slow page while the other worker runs one too.
await Promise.all([get(slowPage(), tokenA), get(slowPage(), tokenA)]);
const pair = await Promise.all([get(slowPage(), tokenA), get(slowPage(), tokenA)]);
console.log(`records ${RECORDS}; a slow page (both workers busy): ${Math.max(...pair.map((r) => r.ms)).toFixed(0)} ms`);
await bLists(); // warm-up
console.log(`B alone:        ${show(await bLists())}`);

let flooding = true;
const seen = new Map<number, number>();
const answered: number[] = [];
const floods = Array.from({ length: FLOOD }, async () => {
  while (flooding) {
    const r = await get(slowPage(), tokenA);
    seen.set(r.status, (seen.get(r.status) ?? 0) + 1);
    if (r.status === 200) answered.push(r.ms);
    else await Bun.sleep(50);
  }
});
await Bun.sleep(200);
const during = await bLists();
flooding = false;
await Promise.all(floods);
console.log(`B while A floods: ${show(during)}`);
console.log(`A's answers: ${[...seen].map(([s, c]) => `${c} × ${s}`).join(", ")}; A's pages that answered 200: ${show(answered)}`);
console.log(`load average ${(await Bun.file("/proc/loadavg").text()).split(" ").slice(0, 3).join(" ")} on ${navigator.hardwareConcurrency} cores`);

proc.kill("SIGTERM");
await proc.exited;
rmSync(dir, { recursive: true, force: true });

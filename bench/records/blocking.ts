// No query blocks the server: while 8 clients send filters on an unindexed field of 1,000,000
// records (each a full scan), /health and GET of one record are timed (bounded: 20 s).
//   bun bench/records/blocking.ts [SITE_DIR]       (a site seeded by bench/records/seed.ts)
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");
const dir = process.argv[2] ?? "/tmp/bench-data/resd-site";
const cli = (...args: string[]) => Bun.spawnSync(["bun", join(ROOT, "cli/main.ts"), ...args, "--dir", dir]).stdout.toString().trim();
cli("user", "add", "bench@example.com", "--password", "bench-password", "--role", "admin", "--api");
const token = cli("token", "bench@example.com");
const proc = Bun.spawn(["bun", join(ROOT, "cli/main.ts"), "serve", "--dir", dir, "--port", "0", "--host", "127.0.0.1"], { env: { ...process.env, RESD_LOG_FORMAT: "text" }, stdout: "pipe", stderr: "inherit" });
let out = "";
void (async () => { for await (const c of proc.stdout as ReadableStream<Uint8Array>) out += new TextDecoder().decode(c); })();
let base = "";
for (let i = 0; !base && i < 1000; i++) { base = /listening on (http:\/\/\S+)/.exec(out)?.[1] ?? ""; await Bun.sleep(20); }
const headers = { authorization: `Bearer ${token}` };
const one = Object.keys(((await (await fetch(`${base}/api/v1/items?limit=1`, { headers })).json()) as { items: Record<string, unknown> }).items)[0];

let running = true;
const statuses: Record<number, number> = {};
const slow = async () => {
  while (running) {
    // `body` has no index: every request scans all records (a different value each time: no cache).
    const r = await fetch(`${base}/api/v1/items?limit=20&filter=body:nothing-${Math.random()}`, { headers });
    statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    await r.arrayBuffer();
  }
};
const clients = Array.from({ length: 8 }, slow);
await Bun.sleep(1000);
const times = { health: [] as number[], get: [] as number[] };
const until = Date.now() + 15_000;
while (Date.now() < until) {
  let t = performance.now();
  await (await fetch(`${base}/health`)).arrayBuffer();
  times.health.push(performance.now() - t);
  t = performance.now();
  await (await fetch(`${base}/api/v1/items/${one}`, { headers })).arrayBuffer();
  times.get.push(performance.now() - t);
  await Bun.sleep(20);
}
running = false;
await Promise.all(clients);
const p = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))].toFixed(1);
console.log(`while 8 clients sent unindexed filters (${JSON.stringify(statuses)} answers): /health p50 ${p(times.health, 0.5)} ms p99 ${p(times.health, 0.99)} ms; GET one p50 ${p(times.get, 0.5)} ms p99 ${p(times.get, 0.99)} ms (${times.get.length} samples)`);
proc.kill("SIGTERM");
await proc.exited;

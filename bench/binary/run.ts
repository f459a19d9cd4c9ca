// Binary benchmark of issue 6: size of dist/resd, start-up time to the first answered request
// (process spawn → first 200 from /health, polled every 2 ms), and idle memory (VmRSS 2 s after start).
//   bun run build && bun bench/binary/run.ts [RUNS]
// The first run uses an empty native cache (sharp's addon and libvips are extracted); later runs reuse it.
import { mkdtempSync, statSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const binary = resolve(import.meta.dir, "../../dist/resd");
const runs = Number(process.argv[2] ?? 10);
const cache = mkdtempSync(join(tmpdir(), "resd-bench-cache-"));
const rss = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(require("node:fs").readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;

console.log(`binary ${binary}: ${(statSync(binary).size / 1048576).toFixed(1)} MiB`);
const starts: number[] = [];
const idle: number[] = [];
for (let i = 0; i < runs; i++) {
  const site = mkdtempSync(join(tmpdir(), "resd-bench-site-"));
  const port = 3400 + i;
  const t0 = performance.now();
  const p = Bun.spawn([binary, "serve", "--dir", site, "--port", String(port), "--host", "127.0.0.1"], {
    env: { PATH: "/usr/bin:/bin", HOME: site, XDG_CACHE_HOME: cache }, stdout: "ignore", stderr: "ignore",
  });
  let ms = 0;
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.status === 200, () => false);
    if (ok) { ms = performance.now() - t0; break; }
    if (performance.now() - t0 > 10_000) throw new Error("no answer within 10 s");
    await Bun.sleep(2);
  }
  starts.push(ms);
  await Bun.sleep(2000);
  idle.push(rss(p.pid));
  p.kill("SIGTERM");
  await p.exited;
  rmSync(site, { recursive: true, force: true });
  console.log(`run ${i + 1}${i === 0 ? " (empty native cache)" : ""}: first answer ${ms.toFixed(0)} ms, idle RSS ${idle.at(-1)!.toFixed(1)} MB`);
}
const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const warm = sorted(starts.slice(1));
console.log(`first answer: cold ${starts[0].toFixed(0)} ms; warm median ${warm[Math.floor(warm.length / 2)]?.toFixed(0)} ms, max ${warm.at(-1)?.toFixed(0)} ms`);
console.log(`idle memory: median ${sorted(idle)[Math.floor(idle.length / 2)].toFixed(1)} MB, max ${sorted(idle).at(-1)!.toFixed(1)} MB`);
rmSync(cache, { recursive: true, force: true });

// Import and export of a csv of ROWS rows through resd, beside the bare limit, in one run.
//   bun bench/import-export/run.ts [ROWS=1000000]
// 1. the reference /work/shared/bench/ref/csv-import.ts (bare papaparse stream + bun:sqlite inserts,
//    no write rules, no history); it also writes /tmp/bench-data/import-<ROWS>.csv once;
// 2. `resd import bench FILE` into a fresh site (all write rules, history on, one transaction);
// 3. `resd export bench --format csv`, then json, and that JSON imported into a new site.
// Each resd step runs in its own process under /usr/bin/time -v: wall time and peak RSS of the whole
// process (startup included).
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const ROWS = Number(process.argv[2] ?? 1_000_000);
const ROOT = resolve(import.meta.dir, "../..");
const REF = "/work/shared/bench/ref/csv-import.ts";
const csv = `/tmp/bench-data/import-${ROWS}.csv`;
const site = "/tmp/bench-data/resd-import-site";

async function run(cmd: string[]): Promise<{ out: string; err: string; code: number }> {
  const p = Bun.spawn(cmd, { stdout: "pipe", stderr: "pipe", cwd: ROOT });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`${cmd.join(" ")} failed (${code}): ${err}`);
  return { out, err, code };
}

/** Wall seconds and peak RSS (MB) from GNU time -v. */
// time's report goes to a file: the measured Bun process makes the shared stderr pipe non-blocking,
// which can cut time's own report short (and make it exit 1).
const TIME_FILE = "/tmp/bench-data/time-report.txt";
const TIME = ["/usr/bin/time", "-v", "-o", TIME_FILE];

function timed(err: string) {
  const wall = /Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)/.exec(err)!;
  const secs = Number(wall[1] ?? 0) * 3600 + Number(wall[2]) * 60 + Number(wall[3]);
  const rss = Number(/Maximum resident set size \(kbytes\): (\d+)/.exec(err)![1]) / 1024;
  return { secs, rss };
}

const line = (label: string, rows: number, secs: number, rss: number) =>
  console.log(`${label.padEnd(52)} ${rows} rows in ${secs.toFixed(2)} s = ${Math.round(rows / secs)} rows/s, peak RSS ${Math.round(rss)} MB`);

mkdirSync("/tmp/bench-data", { recursive: true });
console.log(`bun ${Bun.version}, ${ROWS} rows`);
const ref = await run(["bun", REF, String(ROWS)]);
process.stdout.write(ref.out);
const refRate = Number(/bun:sqlite.*= (\d+) rows\/s/.exec(ref.out)?.[1]);

rmSync(site, { recursive: true, force: true });
mkdirSync(join(site, "resources"), { recursive: true });
writeFileSync(join(site, "resources", "bench.json"), JSON.stringify({
  fields: {
    title: { type: "text", required: true },
    year: { type: "number" },
    status: { type: "select", options: { new: "New", open: "Open", done: "Done", draft: "Draft" } },
    body: { type: "textarea" },
  },
  index: ["status,year"], // the reference's one index
}));
const main = join(ROOT, "cli/main.ts");
const imp = await run([...TIME, "bun", main, "import", "bench", csv, "--json", "--dir", site]);
const stats = JSON.parse(imp.out).stats;
const ti = timed(readFileSync(TIME_FILE, "utf8"));
line("resd import (csv, write rules, history, 1 tx)", stats.imported, ti.secs, ti.rss);

for (const format of ["csv", "json"]) {
  const out = `/tmp/bench-data/export.${format}`;
  await run([...TIME, "bun", main, "export", "bench", "--format", format, "--out", out, "--dir", site]);
  const te = timed(readFileSync(TIME_FILE, "utf8"));
  line(`resd export ${format} (${Math.round(statSync(out).size / 1e6)} MB)`, stats.imported, te.secs, te.rss);
  if (format === "json") {
    // The export imported where the resource does not exist (created from _meta): JSON is streamed.
    const other = `${site}-json`;
    rmSync(other, { recursive: true, force: true });
    mkdirSync(other, { recursive: true });
    const back = await run([...TIME, "bun", main, "import", "bench", out, "--json", "--dir", other]);
    const tj = timed(readFileSync(TIME_FILE, "utf8"));
    line("resd import of that JSON export (new site)", JSON.parse(back.out).stats.imported, tj.secs, tj.rss);
    rmSync(other, { recursive: true, force: true });
  }
  rmSync(out, { force: true });
}
if (refRate) console.log(`import rate / bare limit: ${Math.round((100 * stats.imported) / ti.secs / refRate)} % (target >= 60 %)`);
rmSync(site, { recursive: true, force: true });

// Slow request bodies (issue 31, item 12), on the real server at 127.0.0.1 with its default
// settings: CONNS connections each declare a 100 KB JSON body to PATH (default: a create, whose
// handler reads the body; /no-such-path is answered 404 without reading it) and send one byte of it
// every EVERY_MS. Meanwhile, once a second, a GET /health and a small create from another client. Prints,
// every 5 s, how many trickling connections are still open, what they were answered, the server's
// open file descriptors, and whether the other client was served. Bounded: CONNS connections,
// SECONDS seconds (past RESD_BODY_TIMEOUT's default of 30 s).
//   bun bench/limits/slow-bodies.ts [CONNS] [SECONDS] [EVERY_MS] [PATH]
// Extra server settings come from the environment (e.g. RESD_MAX_BODIES=1000).
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");
const MAIN = join(ROOT, "cli/main.ts");
const CONNS = Number(process.argv[2] ?? 300);
const SECONDS = Number(process.argv[3] ?? 45);
const EVERY_MS = Number(process.argv[4] ?? 2000);
const PATH = process.argv[5] ?? "/api/v1/notes";

const dir = mkdtempSync(join(tmpdir(), "resd-bench-bodies-"));
mkdirSync(join(dir, "resources"));
writeFileSync(join(dir, "resources/notes.json"), JSON.stringify({ fields: { title: { type: "text" } } }));
async function cli(args: string[]): Promise<string> {
  const p = Bun.spawn(["bun", MAIN, ...args, "--dir", dir], { cwd: dir, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`resd ${args.join(" ")}: ${err}`);
  return out.trim();
}
await cli(["user", "add", "a@example.com", "--password", "a-bench-password", "--role", "admin", "--api"]);
const token = await cli(["token", "a@example.com"]);

const proc = Bun.spawn(["bun", MAIN, "serve", "--dir", dir, "--port", "0", "--host", "127.0.0.1"], {
  cwd: dir, env: { ...process.env, RESD_LOG_FORMAT: "json" }, stdout: "pipe", stderr: "inherit",
});
let out = "";
void (async () => { for await (const c of proc.stdout as ReadableStream<Uint8Array>) if (out.length < 100_000) out += new TextDecoder().decode(c); })();
let base = "";
for (let t = 0; !base && t < 1000; t++) { base = /listening on (http:\/\/\S+)/.exec(out)?.[1] ?? ""; await Bun.sleep(20); }
if (!base) throw new Error("the server did not start");
const { port } = new URL(base);
const fds = () => readdirSync(`/proc/${proc.pid}/fd`).length;
const rss = () => `${(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${proc.pid}/status`, "utf8"))![1]) / 1024).toFixed(0)} MB`;
console.log(`server before the connections: fds ${fds()}, resident ${rss()}`);

type Conn = { socket: Socket; status: number | null; closed: boolean };
const conns: Conn[] = [];
const t0 = performance.now();
for (let i = 0; i < CONNS; i++) {
  const c: Conn = { socket: connect(Number(port), "127.0.0.1"), status: null, closed: false };
  c.socket.on("data", (d) => (c.status ??= Number(d.toString().split(" ")[1])));
  c.socket.on("error", () => undefined);
  c.socket.on("close", () => (c.closed = true));
  c.socket.write(`POST ${PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"title":"`);
  conns.push(c);
}
const trickle = setInterval(() => { for (const c of conns) if (!c.closed) c.socket.write("a"); }, EVERY_MS);

type Probe = { health: number; healthMs: number; create: number; createMs: number };
async function probe(): Promise<Probe> {
  const h0 = performance.now();
  const health = await fetch(`${base}/health`).then((r) => r.status, () => 0);
  const c0 = performance.now();
  const create = await fetch(`${base}/api/v1/notes`, {
    method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify({ title: "meanwhile" }),
  }).then((r) => r.status, () => 0);
  return { health, healthMs: c0 - h0, create, createMs: performance.now() - c0 };
}

const tally = () => {
  const by = new Map<string, number>();
  for (const c of conns) {
    const k = c.closed ? `closed after ${c.status ?? "no answer"}` : c.status ? `open after ${c.status}` : "open, unanswered";
    by.set(k, (by.get(k) ?? 0) + 1);
  }
  return [...by].map(([k, n]) => `${n} ${k}`).join(", ");
};
const probes: Probe[] = [];
for (let s = 1; s <= SECONDS; s++) {
  await Bun.sleep(t0 + s * 1000 - performance.now());
  probes.push(await probe());
  if (s % 5 === 0) {
    const last = probes.slice(-5);
    console.log(`${String(s).padStart(3)} s: ${tally()}; server fds ${fds()}, resident ${rss()}; meanwhile health ${last.map((p) => `${p.health}/${p.healthMs.toFixed(0)}ms`).join(" ")}, creates ${last.map((p) => `${p.create}/${p.createMs.toFixed(0)}ms`).join(" ")}`);
  }
}
clearInterval(trickle);
for (const c of conns) c.socket.destroy();
proc.kill("SIGTERM");
await proc.exited;
rmSync(dir, { recursive: true, force: true });

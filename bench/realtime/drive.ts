/**
 * The realtime bench's driver (run by bench/realtime/run.sh and two-instances.sh, which start the
 * servers): creates notes over the API, flat out or at a steady rate, with and without subscriber
 * processes (bench/realtime/subscribers.ts) listening, and prints what it measured.
 *
 * Env:
 *   BASE          where the creates go (http://127.0.0.1:PORT)
 *   TOKEN         bearer token (for writes and streams)
 *   SERVERS       label:pid,… whose memory (VmRSS) and CPU are watched
 *   SUBS          label,base,procs,per;…   subscriber groups (default: BASE, 4 processes x 250)
 *   PLAN          steps in order, of: warmup alone-flat alone-steady subscribe idle subs-steady subs-flat after
 *   COUNT (3000)  creates per create step;  CONC (8) concurrent writers;  RATE (200) creates/s when steady
 *   OURS_TREE     pid whose children are the bench's too (PostgreSQL's postmaster), OURS_TREE_LABEL
 *   WARMUP (1000) creates of the warmup step;  IDLE_S (30) seconds of the idle step;  DRAIN_S (120) most seconds to wait for events after a step
 */
import { readFileSync, readdirSync } from "node:fs";
import { Histogram, cpuSeconds, cpuSplit, f, now, pct, rssMB, type SparseHistogram } from "./lib";

const env = process.env;
const BASE = env.BASE ?? "";
const TOKEN = env.TOKEN ?? "";
const COUNT = Number(env.COUNT ?? 3000);
const CONC = Number(env.CONC ?? 8);
const RATE = Number(env.RATE ?? 200);
const IDLE_S = Number(env.IDLE_S ?? 30);
const DRAIN_S = Number(env.DRAIN_S ?? 120);
const PLAN = (env.PLAN ?? "alone-flat alone-steady subscribe idle subs-steady subs-flat after").split(/\s+/).filter(Boolean);
const SERVERS = (env.SERVERS ?? "").split(",").filter(Boolean).map((s) => {
  const [label, pid] = s.split(":");
  return { label, pid: Number(pid) };
});
type Group = { label: string; base: string; procs: number; per: number };
const GROUPS: Group[] = (env.SUBS ?? `subs,${BASE},4,250`).split(";").filter(Boolean).map((g) => {
  const [label, base, procs, per] = g.split(",");
  return { label, base, procs: Number(procs), per: Number(per) };
});
for (const u of [BASE, ...GROUPS.map((g) => g.base)]) {
  if (!/^http:\/\/127\.0\.0\.1:\d+$/.test(u)) throw new Error(`drive.ts: loopback http://127.0.0.1:PORT only, got "${u}"`);
}
const HERE = import.meta.dir;
const say = (s = "") => console.log(s);

// ---- what else the machine does ----
/** Busy CPU seconds of the whole machine so far (all cores, from /proc/stat). */
function machineBusy(): number {
  const [, ...xs] = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/);
  const [user, nice, system, , , irq, softirq, steal] = xs.map(Number);
  return (user + nice + system + irq + softirq + steal) / 100;
}
/** OURS_TREE: a process the bench started whose children count as its own too (PostgreSQL's postmaster). */
const TREE = Number(env.OURS_TREE ?? 0);
/** CPU seconds of that process and its children (the database's share of a step). */
function treeBusy(): number {
  if (!TREE) return 0;
  let sum = cpuSeconds(TREE) || 0;
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === TREE) sum += cpuSeconds(Number(d)) || 0;
    } catch {
      // gone meanwhile
    }
  }
  return sum;
}
/** CPU seconds of the processes this bench started (servers, subscribers, this driver, OURS_TREE). */
function oursBusy(): number {
  return SERVERS.reduce((s, x) => s + (cpuSeconds(x.pid) || 0), 0) + children.reduce((s, c) => s + (cpuSeconds(c.proc.pid) || 0), 0) + cpuSeconds(process.pid) + treeBusy();
}
type Load = { machine: number; ours: number; tree: number; t: number };
const loadMark = (): Load => ({ machine: machineBusy(), ours: oursBusy(), tree: treeBusy(), t: now() });
/** The rest of the machine's CPU use since `m`: other processes than the bench's own (their noise). */
function otherLoad(m: Load): string {
  const secs = (now() - m.t) / 1000;
  const other = Math.max(0, machineBusy() - m.machine - (oursBusy() - m.ours));
  const tree = TREE ? `database (${env.OURS_TREE_LABEL ?? `pid ${TREE} and children`}) ${f((100 * (treeBusy() - m.tree)) / secs, 0)} % of a core; ` : "";
  return `${tree}other processes on the machine: ${f((100 * other) / secs, 0)} % of a core`;
}
/** Waits (up to QUIET_WAIT_S, default 600) until the machine is nearly idle: < 10 % of a core busy for 10 s. */
async function waitQuiet(): Promise<void> {
  const t0 = now(), until = t0 + Number(env.QUIET_WAIT_S ?? 600) * 1000;
  let quiet = 0;
  for (;;) {
    const m = loadMark();
    await Bun.sleep(2000);
    const busy = (100 * (machineBusy() - m.machine)) / ((now() - m.t) / 1000);
    quiet = busy < 10 ? quiet + 1 : 0;
    if (quiet >= 5) return say(`# machine quiet before the run (< 10 % of a core busy for 10 s; waited ${f((now() - t0) / 1000, 0)} s)`);
    if (now() > until) return say(`# WARNING: the machine is still busy (${f(busy, 0)} % of a core) after QUIET_WAIT_S; measured anyway`);
  }
}

// ---- server memory and CPU ------------------------------------------------------------------
type Watch = { max: Map<number, number>; cpu0: Map<number, { user: number; sys: number }>; t0: number; timer: ReturnType<typeof setInterval> };
function watch(): Watch {
  const max = new Map<number, number>();
  const cpu0 = new Map<number, { user: number; sys: number }>();
  for (const s of SERVERS) {
    max.set(s.pid, rssMB(s.pid));
    cpu0.set(s.pid, cpuSplit(s.pid));
  }
  const timer = setInterval(() => {
    for (const s of SERVERS) max.set(s.pid, Math.max(max.get(s.pid)!, rssMB(s.pid)));
  }, 200);
  return { max, cpu0, t0: now(), timer };
}
/** Server CPU seconds per step, by server label (for the per-create cost in the summary). */
const serverCpu: Record<string, Record<string, number>> = {};
function unwatch(w: Watch, step: string, creates: number): string {
  clearInterval(w.timer);
  const secs = (now() - w.t0) / 1000;
  return SERVERS.map((s) => {
    const a = w.cpu0.get(s.pid)!, b = cpuSplit(s.pid);
    const user = b.user - a.user, sys = b.sys - a.sys;
    (serverCpu[step] ??= {})[s.label] = user + sys;
    return `${s.label} RSS max ${f(Math.max(w.max.get(s.pid)!, rssMB(s.pid)), 0)} MB, now ${f(rssMB(s.pid), 0)} MB, CPU ${f((100 * (user + sys)) / secs, 0)} % of a core (user ${f(user, 1)} s + system ${f(sys, 1)} s = ${f((1000 * (user + sys)) / creates, 2)} ms per create)`;
  }).join("; ");
}

// ---- the writer -------------------------------------------------------------------------------
type Written = { ok: number; failed: number; firstSend: number; lastAck: number; post: number[]; lag: number[]; errors: Record<string, number> };
/** COUNT creates of `phase` by CONC writers: flat out (rate 0) or one every 1/rate s on a fixed schedule. */
async function creates(phase: string, count: number, rate: number): Promise<Written> {
  const w: Written = { ok: 0, failed: 0, firstSend: 0, lastAck: 0, post: [], lag: [], errors: {} };
  let next = 1;
  const start = now() + 50;
  const worker = async () => {
    for (;;) {
      const n = next++;
      if (n > count) return;
      if (rate > 0) {
        const due = start + ((n - 1) * 1000) / rate;
        const wait = due - now();
        if (wait > 0) await Bun.sleep(wait);
        w.lag.push(Math.max(0, now() - due));
      }
      const sent = now();
      if (!w.firstSend) w.firstSend = sent;
      try {
        const res = await fetch(`${BASE}/api/v1/notes`, {
          method: "POST",
          headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
          body: JSON.stringify({ title: `realtime bench ${phase} ${n}`, n, sent, phase }),
        });
        await res.arrayBuffer();
        const at = now();
        if (res.status === 201) {
          w.ok++;
          w.post.push(at - sent);
          w.lastAck = Math.max(w.lastAck, at);
        } else {
          w.failed++;
          w.errors[String(res.status)] = (w.errors[String(res.status)] ?? 0) + 1;
        }
      } catch (e) {
        w.failed++;
        const k = String(e).slice(0, 80);
        w.errors[k] = (w.errors[k] ?? 0) + 1;
      }
    }
  };
  await Promise.all(Array.from({ length: CONC }, worker));
  return w;
}
function wroteLine(w: Written, rate: number): string {
  const secs = (w.lastAck - w.firstSend) / 1000;
  const errs = w.failed ? ` FAILED ${w.failed} ${JSON.stringify(w.errors)}` : "";
  const steady = rate > 0 ? `, target ${rate}/s, start lag p99 ${f(pct(w.lag, 0.99))} ms` : "";
  return `${w.ok} creates in ${f(secs, 2)} s = ${f(w.ok / secs, 0)} creates/s${steady}; POST latency p50 ${f(pct(w.post, 0.5), 2)} ms, p99 ${f(pct(w.post, 0.99), 2)} ms, max ${f(Math.max(...w.post), 1)} ms${errs}`;
}

// ---- subscriber processes ---------------------------------------------------------------------
type Child = { group: Group; proc: ReturnType<typeof Bun.spawn>; ready: Promise<Ready>; pending: ((s: Stats) => void)[] };
type Ready = { connected: number; failed: number; errors: string[]; ms: number };
type PhaseStats = { events: number; distinct: number; dupes: number; minPerStream: number; maxPerStream: number; first: number; last: number; hist: SparseHistogram };
type Stats = { pid: number; streams: number; connected: number; failed: number; ended: number; pings: number; unparsed: number; kinds: Record<string, number>; closes: string[]; closeCount: number; errors: string[]; phases: Record<string, PhaseStats> };
const children: Child[] = [];
const stopChildren = () => {
  for (const c of children) if (c.proc.exitCode === null) c.proc.kill();
};
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(sig, () => {
  stopChildren();
  process.exit(130);
});

function spawnGroup(g: Group): void {
  for (let i = 0; i < g.procs; i++) {
    let onReady!: (r: Ready) => void;
    const child: Child = { group: g, proc: null as never, ready: new Promise((r) => (onReady = r)), pending: [] };
    child.proc = Bun.spawn(["bun", `${HERE}/subscribers.ts`], {
      env: { ...process.env, RT_URL: `${g.base}/api/v1/realtime?subscribe=notes`, TOKEN, STREAMS: String(g.per), MAXN: String(COUNT), LABEL: `${g.label}#${i + 1}` },
      stdout: "ignore",
      stderr: "inherit",
      ipc(m: { type: string } & Record<string, unknown>) {
        if (m.type === "ready") onReady(m as unknown as Ready);
        else if (m.type === "stats") child.pending.shift()?.(m as unknown as Stats);
      },
    });
    children.push(child);
  }
}
const ask = (c: Child) => new Promise<Stats>((resolve) => {
  c.pending.push(resolve);
  c.proc.send({ type: "stats" });
});
const allStats = () => Promise.all(children.map(ask));
function subsCpu(): number {
  return children.reduce((s, c) => s + cpuSeconds(c.proc.pid), 0);
}

/** Waits until every connected stream has the phase's `ok` events (or nothing moved for 5 s). */
async function drain(phase: string, ok: number): Promise<Stats[]> {
  const until = now() + DRAIN_S * 1000;
  let last = -1, lastMove = now();
  for (;;) {
    const st = await allStats();
    const have = st.reduce((s, x) => s + (x.phases[phase]?.events ?? 0), 0);
    const want = st.reduce((s, x) => s + (x.connected - x.closeCount) * ok, 0);
    if (have >= want) return st;
    if (have !== last) [last, lastMove] = [have, now()];
    if (now() - lastMove > 5000 || now() > until) {
      say(`  (stopped waiting: ${have} of ${want} events arrived)`);
      return st;
    }
    await Bun.sleep(250);
  }
}

function report(phase: string, w: Written, st: Stats[]): void {
  let firstRecv = Number.POSITIVE_INFINITY, lastRecv = 0, total = 0;
  for (const g of GROUPS) {
    const mine = st.filter((_, i) => children[i].group === g);
    const h = new Histogram();
    let events = 0, distinct = 0, dupes = 0, min = Number.POSITIVE_INFINITY, streams = 0, closes = 0, other: Record<string, number> = {};
    for (const s of mine) {
      streams += s.connected;
      closes += s.closeCount;
      for (const [k, v] of Object.entries(s.kinds)) if (k !== "connect") other[k] = (other[k] ?? 0) + v;
      const p = s.phases[phase];
      if (!p) {
        min = 0;
        continue;
      }
      h.merge(p.hist);
      events += p.events;
      distinct += p.distinct;
      dupes += p.dupes;
      min = Math.min(min, p.minPerStream);
      if (p.first) firstRecv = Math.min(firstRecv, p.first);
      lastRecv = Math.max(lastRecv, p.last);
    }
    total += events;
    const missed = streams * w.ok - distinct;
    say(`  [${g.label}: ${streams} streams on ${g.base}] ${events} events; missed ${missed} (fewest on one stream: ${min} of ${w.ok}), duplicates ${dupes}`);
    say(`  [${g.label}] send→receipt latency p50 ${f(h.quantile(0.5), 1)} ms, p90 ${f(h.quantile(0.9), 1)} ms, p99 ${f(h.quantile(0.99), 1)} ms, p99.9 ${f(h.quantile(0.999), 1)} ms, max ${f(h.max, 1)} ms${h.below ? ` (${h.below} negative: clock)` : ""}`);
    if (closes || Object.keys(other).length) say(`  [${g.label}] other events so far (all steps): ${JSON.stringify(other)}; streams closed by the server: ${closes}`);
  }
  const span = (lastRecv - w.firstSend) / 1000;
  say(`  delivered ${total} events from first send to last receipt in ${f(span, 2)} s = ${f(total / span, 0)} events/s; last event ${f(lastRecv - w.lastAck, 1)} ms after the last 201`);
}

// ---- the steps --------------------------------------------------------------------------------
const results: Record<string, number> = {};
say(`# drive.ts: BASE=${BASE} COUNT=${COUNT} CONC=${CONC} RATE=${RATE} PLAN="${PLAN.join(" ")}" SUBS="${GROUPS.map((g) => `${g.label}: ${g.procs}x${g.per} on ${g.base}`).join("; ")}"`);
say(`# servers: ${SERVERS.map((s) => `${s.label} pid ${s.pid}, RSS ${f(rssMB(s.pid), 0)} MB`).join("; ")}`);
await waitQuiet();
for (const step of PLAN) {
  say();
  const [kind, at] = step.split("@");
  if (kind === "alone-flat" || kind === "alone-steady" || kind === "subs-flat" || kind === "subs-steady") {
    const rate = kind.endsWith("steady") ? Number(at ?? RATE) : 0;
    say(`== ${step}: ${COUNT} creates, ${CONC} writers, ${rate ? `steady ${rate}/s` : "flat out"}, ${children.length ? `${children.reduce((s, c) => s + c.group.per, 0)} subscribers` : "no subscribers"}`);
    const wt = watch();
    const lm = loadMark();
    const c0 = subsCpu();
    const t = now();
    const w = await creates(step, COUNT, rate);
    results[step] = w.ok / ((w.lastAck - w.firstSend) / 1000);
    say(`  ${wroteLine(w, rate)}`);
    if (children.length) {
      const st = await drain(step, w.ok);
      report(step, w, st);
    }
    say(`  server: ${unwatch(wt, step, w.ok)}${children.length ? `; subscriber processes CPU ${f((100 * (subsCpu() - c0)) / ((now() - t) / 1000), 0)} % of a core` : ""}; ${otherLoad(lm)}`);
  } else if (step === "warmup") {
    // Not measured: the server's code gets compiled and its caches filled before the first timed step.
    const w = await creates("warmup", Math.min(COUNT, Number(env.WARMUP ?? 1000)), 0);
    say(`== warmup (not measured): ${w.ok} creates flat out${w.failed ? `, FAILED ${w.failed} ${JSON.stringify(w.errors)}` : ""}`);
  } else if (step === "subscribe") {
    const total = GROUPS.reduce((s, g) => s + g.procs * g.per, 0);
    say(`== subscribe: ${total} streams (${GROUPS.map((g) => `${g.procs} processes x ${g.per} on ${g.label}`).join(", ")})`);
    const before = SERVERS.map((s) => rssMB(s.pid));
    const t = now();
    for (const g of GROUPS) spawnGroup(g);
    const ready = await Promise.race([Promise.all(children.map((c) => c.ready)), Bun.sleep(90_000).then(() => null)]);
    if (!ready) say("  NOT all connected within 90 s");
    else {
      const connected = ready.reduce((s, r) => s + r.connected, 0);
      const failed = ready.reduce((s, r) => s + r.failed, 0);
      say(`  ${connected} connected, ${failed} failed, in ${f((now() - t) / 1000, 1)} s (processes started included)${failed ? `; errors: ${JSON.stringify(ready.flatMap((r) => r.errors).slice(0, 3))}` : ""}`);
    }
    await Bun.sleep(2000);
    say(`  server RSS before ${SERVERS.map((s, i) => `${s.label} ${f(before[i], 0)} MB`).join(", ")}; with the streams open (2 s later) ${SERVERS.map((s) => `${s.label} ${f(rssMB(s.pid), 0)} MB`).join(", ")}`);
  } else if (step === "idle" || step === "after") {
    const secs = step === "idle" ? IDLE_S : Math.min(IDLE_S, 15);
    const every = secs > 15 ? 3 : 1;
    say(`== ${step}: ${children.reduce((s, c) => s + c.group.per, 0)} subscribers ${step === "idle" ? "idle" : "after the load"}, ${secs} s, server RSS every ${secs > 15 ? 3 : 1} s`);
    const lm = loadMark();
    const series = new Map<number, number[]>(SERVERS.map((s) => [s.pid, [rssMB(s.pid)]]));
    const cpu0 = SERVERS.map((s) => cpuSeconds(s.pid));
    const c0 = subsCpu();
    const t = now();
    for (let i = 0; i < secs / every; i++) {
      await Bun.sleep(every * 1000);
      for (const s of SERVERS) series.get(s.pid)!.push(rssMB(s.pid));
    }
    const el = (now() - t) / 1000;
    SERVERS.forEach((s, i) => {
      const xs = series.get(s.pid)!;
      say(`  ${s.label} RSS MB: ${xs.map((x) => f(x, 0)).join(" ")}  (first ${f(xs[0], 0)}, last ${f(xs[xs.length - 1], 0)}, min ${f(Math.min(...xs), 0)}, max ${f(Math.max(...xs), 0)}); CPU ${f((100 * (cpuSeconds(s.pid) - cpu0[i])) / el, 1)} % of a core`);
    });
    say(`  subscriber processes CPU ${f((100 * (subsCpu() - c0)) / el, 1)} % of a core; ${otherLoad(lm)}`);
    const st = await allStats();
    say(`  streams still open: ${st.reduce((s, x) => s + x.connected - x.ended, 0)}; heartbeats received ${st.reduce((s, x) => s + x.pings, 0)}; closed by the server ${st.reduce((s, x) => s + x.closeCount, 0)}${st.some((x) => x.closes.length) ? ` e.g. ${st.flatMap((x) => x.closes)[0]}` : ""}; unparsed events ${st.reduce((s, x) => s + x.unparsed, 0)}`);
  } else throw new Error(`drive.ts: unknown step ${step}`);
}
say();
if (serverCpu["alone-flat"] && serverCpu["subs-flat"] && SERVERS.length === 1) {
  const label = SERVERS[0].label, streams = children.reduce((s, c) => s + c.group.per, 0);
  const alone = serverCpu["alone-flat"][label] / COUNT, subs = serverCpu["subs-flat"][label] / COUNT;
  say(`== server CPU per create, flat out: ${f(1000 * alone, 3)} ms alone, ${f(1000 * subs, 3)} ms with ${streams} subscribers: ≈ ${f((1e6 * (subs - alone)) / streams, 1)} µs of server CPU per event delivered to one stream`);
}
if (results["alone-flat"] && results["subs-flat"]) {
  const r = results["subs-flat"] / results["alone-flat"];
  say(`== flat-out creates/s with subscribers / without: ${f(results["subs-flat"], 0)} / ${f(results["alone-flat"], 0)} = ${f(r, 3)} (cost ${f(100 * (1 - r), 1)} %; goal under 10 %)`);
}
for (const [step, r] of Object.entries(results)) {
  if (!step.startsWith("subs-steady")) continue;
  const rate = Number(step.split("@")[1] ?? RATE);
  const alone = results[`alone-steady@${rate}`] ?? (rate === RATE ? results["alone-steady"] : undefined);
  say(`== ${step}: ${f(r, 0)} creates/s managed of ${rate}/s asked${alone ? ` (without subscribers: ${f(alone, 0)}/s)` : ""}`);
}
for (const c of children) c.proc.send({ type: "exit" });
await Promise.race([Promise.all(children.map((c) => c.proc.exited)), Bun.sleep(3000)]);
stopChildren();
process.exit(0);

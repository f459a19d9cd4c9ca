/**
 * One subscriber process of the realtime bench: opens STREAMS Server-Sent-Events streams
 * (`fetch`, read like an EventSource would) to RT_URL with a bearer token and, for every `create`
 * event, takes the record's `sent` (the writer's clock when it sent the POST) from the arrival time:
 * send→receipt latency. Counts, per stream and per phase (the record's `phase`), which `n` it saw,
 * so missed and duplicated events show. Other events (bulk, close, reset, …) are counted by kind.
 *
 * Run by bench/realtime/drive.ts over Bun's IPC channel:
 *   → parent {type:"ready", connected, failed, errors, ms}   once every stream said `connect`
 *   ← {type:"stats"}  → {type:"stats", …}                      what it saw so far
 *   ← {type:"exit"}                                             closes the streams and exits
 * Env: RT_URL (…/api/v1/realtime?subscribe=notes), TOKEN, STREAMS (250), MAXN (largest n per
 * phase, for the seen-bitmaps), LABEL, MAX_S (1800: it exits after that long, whatever happens). Alone (no IPC): prints its stats every 5 s, for a look by hand.
 */
import { Histogram, now } from "./lib";

const URL_ = process.env.RT_URL ?? "";
const TOKEN = process.env.TOKEN ?? "";
const STREAMS = Number(process.env.STREAMS ?? 250);
const MAXN = Number(process.env.MAXN ?? 10_000);
const LABEL = process.env.LABEL ?? "subs";
if (!/^http:\/\/(127\.0\.0\.1|localhost)[:/]/.test(URL_)) {
  console.error(`subscribers.ts: RT_URL must be a loopback http URL, got "${URL_}"`);
  process.exit(2);
}

type Phase = { hist: Histogram; events: number; dupes: number; perStream: Uint32Array; seen: Uint8Array; first: number; last: number };
const phases = new Map<string, Phase>();
const phaseOf = (name: string): Phase => {
  let p = phases.get(name);
  if (!p) phases.set(name, (p = { hist: new Histogram(), events: 0, dupes: 0, perStream: new Uint32Array(STREAMS), seen: new Uint8Array(STREAMS * (MAXN + 1)), first: 0, last: 0 }));
  return p;
};
const kinds: Record<string, number> = {};
const closes: string[] = [];
let connected = 0, failed = 0, ended = 0, pings = 0, unparsed = 0;
const errors: string[] = [];
const t0 = now();
let readySent = false;
const controllers: AbortController[] = [];

function numberAfter(data: string, key: string, from: number): number {
  const i = data.indexOf(key, from);
  return i < 0 ? Number.NaN : parseFloat(data.slice(i + key.length, i + key.length + 32));
}

function onEvent(stream: number, event: string, data: string, at: number): void {
  if (event !== "create") {
    kinds[event] = (kinds[event] ?? 0) + 1;
    if (event === "connect") {
      connected++;
      maybeReady();
    } else if (event === "close") closes.push(data.slice(0, 200));
    return;
  }
  // The record's fields, found without parsing the whole event (order: …"record":{…"n":…,"sent":…,"phase":"…"}).
  const r = data.indexOf('"record":');
  const n = numberAfter(data, '"n":', r);
  const sent = numberAfter(data, '"sent":', r);
  const pi = data.indexOf('"phase":"', r);
  if (r < 0 || !Number.isFinite(n) || !Number.isFinite(sent) || pi < 0) {
    unparsed++;
    return;
  }
  const name = data.slice(pi + 9, data.indexOf('"', pi + 9));
  const p = phaseOf(name);
  p.events++;
  if (!p.first) p.first = at;
  p.last = at;
  p.hist.add(at - sent);
  if (n >= 1 && n <= MAXN) {
    const k = stream * (MAXN + 1) + n;
    if (p.seen[k]) p.dupes++;
    else {
      p.seen[k] = 1;
      p.perStream[stream]++;
    }
  }
}

function onBlock(stream: number, block: string, at: number): void {
  if (block.startsWith(":")) {
    pings++;
    return;
  }
  let event = "message", data = "";
  for (const line of block.split("\n")) {
    if (line.startsWith("event: ")) event = line.slice(7);
    else if (line.startsWith("data: ")) data = data ? `${data}\n${line.slice(6)}` : line.slice(6);
  }
  if (event === "message" && !data) return; // `retry:` alone
  onEvent(stream, event, data, at);
}

async function open(stream: number): Promise<void> {
  const ac = new AbortController();
  controllers[stream] = ac;
  let res: Response;
  try {
    res = await fetch(URL_, { headers: { authorization: `Bearer ${TOKEN}`, accept: "text/event-stream" }, signal: ac.signal });
  } catch (e) {
    failed++;
    if (errors.length < 5) errors.push(String(e));
    maybeReady();
    return;
  }
  if (res.status !== 200 || !res.body) {
    failed++;
    if (errors.length < 5) errors.push(`${res.status} ${(await res.text()).slice(0, 300)}`);
    maybeReady();
    return;
  }
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      const at = now();
      buf += decoder.decode(value, { stream: true });
      let from = 0, k: number;
      while ((k = buf.indexOf("\n\n", from)) >= 0) {
        onBlock(stream, buf.slice(from, k), at);
        from = k + 2;
      }
      buf = from ? buf.slice(from) : buf;
    }
  } catch (e) {
    if (!ac.signal.aborted && errors.length < 5) errors.push(`stream ${stream}: ${e}`);
  }
  ended++;
}

function maybeReady(): void {
  if (readySent || connected + failed < STREAMS) return;
  readySent = true;
  process.send?.({ type: "ready", label: LABEL, connected, failed, errors, ms: now() - t0 });
}

function stats() {
  const out: Record<string, unknown> = {};
  for (const [name, p] of phases) {
    let min = Number.POSITIVE_INFINITY, max = 0, full = 0;
    for (let i = 0; i < STREAMS; i++) {
      const c = p.perStream[i];
      if (c < min) min = c;
      if (c > max) max = c;
    }
    for (let i = 0; i < STREAMS; i++) if (p.perStream[i] === max) full++;
    let distinct = 0;
    for (let i = 0; i < STREAMS; i++) distinct += p.perStream[i];
    out[name] = { events: p.events, distinct, dupes: p.dupes, minPerStream: min, maxPerStream: max, first: p.first, last: p.last, hist: p.hist.sparse() };
  }
  return { type: "stats", label: LABEL, pid: process.pid, streams: STREAMS, connected, failed, ended, pings, unparsed, kinds, closes: closes.slice(0, 5), closeCount: closes.length, errors, phases: out };
}

// Never outlives the driver: its IPC channel closing (it exited or was killed) ends this process too,
// and so does MAX_S seconds (default 1800) whatever happens.
process.on("disconnect", () => process.exit(0));
setTimeout(() => process.exit(3), Number(process.env.MAX_S ?? 1800) * 1000).unref();
process.on("message", (m: { type: string }) => {
  if (m.type === "stats") process.send?.(stats());
  else if (m.type === "exit") {
    for (const ac of controllers) ac?.abort();
    setTimeout(() => process.exit(0), 100);
  }
});

// Opened 25 at a time, as a page full of clients arriving would.
for (let i = 0; i < STREAMS; i += 25) {
  for (let j = i; j < Math.min(STREAMS, i + 25); j++) void open(j);
  await Bun.sleep(20);
}
if (!process.send) {
  setInterval(() => {
    const s = stats();
    console.log(JSON.stringify({ ...s, phases: Object.fromEntries(Object.entries(s.phases).map(([k, v]) => [k, { ...(v as object), hist: undefined }])) }));
  }, 5000);
}

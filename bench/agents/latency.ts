/**
 * What resd adds to an agent's answer: a scripted provider on 127.0.0.1 answers at once (one tool
 * call, then a streamed text), so the time from `post` to the `done` event is resd's own — the job
 * queue's pickup, the run, the tool call as the asker, the stored steps and reply. Sequential
 * questions, then eight at once (eight users). Run: `bun bench/agents/latency.ts [N]`.
 */
import { rmSync } from "node:fs";
import { makeSite, serve, cli } from "../../test/helpers/site";
import { call, tokenFor } from "../../test/helpers/access";
import { fakeAi, type Reply } from "../../test/helpers/fake-ai";
import { openSse } from "../../test/helpers/sse";

const N = Number(process.argv[2] ?? 100);
const ai = fakeAi();
const dir = makeSite({ defs: { notes: { fields: { title: { type: "text" } } } } });
await cli(dir, ["user", "add", "admin@example.com", "--password", "admin-password", "--role", "admin", "--api"]);
const server = await serve(dir, { env: { AI_API_KEY: "k", AI_BASE_URL: ai.base, AI_MODEL: "fake", RESD_JOB_POLL: "1000", RESD_AI_RATE: "1000000" } });
const token = await tokenFor(server.base, "admin@example.com", "admin-password");
await call(server.base, "POST", "/api/v1/notes/n1", { token, body: { title: "A note" } });
// Every question: read the note, then answer.
let turn = 0;
const replies: Reply = () => (turn++ % 2 === 0 ? { tools: [{ name: "read_record", arguments: { resource: "notes", uuid: "n1" } }] } : { text: "The note is called A note." });
ai.script(...Array.from({ length: 4 * N + 64 }, () => replies));

async function ask(): Promise<number> {
  const t0 = performance.now();
  const posted = await call(server.base, "POST", "/api/v1/agent-chat", { token, body: { operation: "post", text: "What is the note called?" } });
  const sse = await openSse(`${server.base}/api/v1/agent-chat?operation=events&uuid=${posted.body!.uuid}`, { authorization: `Bearer ${token}` });
  await sse.next((e) => e.event === "done" || (e.event === "state" && e.json.messages.length > 1), 30_000);
  sse.close();
  return performance.now() - t0;
}
const pct = (xs: number[], p: number) => xs.sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
const line = (what: string, xs: number[], ms: number) => console.log(`${what}: ${xs.length} answers in ${(ms / 1000).toFixed(1)} s (${(xs.length / (ms / 1000)).toFixed(1)}/s), p50 ${pct(xs, 0.5).toFixed(1)} ms, p99 ${pct(xs, 0.99).toFixed(1)} ms`);

for (let i = 0; i < 5; i++) await ask(); // warm up
const one: number[] = [];
let t = performance.now();
for (let i = 0; i < N; i++) one.push(await ask());
line("one at a time", one, performance.now() - t);
const eight: number[] = [];
t = performance.now();
await Promise.all(Array.from({ length: 8 }, async () => { for (let i = 0; i < N / 8; i++) eight.push(await ask()); }));
line("eight at once", eight, performance.now() - t);
const rss = (await call(server.base, "GET", "/api/v1/.system-messages", { token })).status;
console.log(`server: pid ${server.proc.pid}, RSS ${(Number((await Bun.file(`/proc/${server.proc.pid}/status`).text()).match(/VmRSS:\s+(\d+)/)![1]) / 1024).toFixed(0)} MB (system-messages ${rss})`);
await server.stop();
ai.stop();
rmSync(dir, { recursive: true, force: true });

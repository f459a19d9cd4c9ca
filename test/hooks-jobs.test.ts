/**
 * The durable job queue through the real server and CLI: queued only with a committed write,
 * retried with backoff, dead-lettered, revived by `resd jobs retry`, and surviving a kill -9.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { adminSite, cli, serve, siteEnv, type Server } from "./helpers/site";
import { openSite } from "../src/core/open-site";
import { loadConfig } from "../src/core/config";
import { createRecord } from "../src/core/records/service";
import { SYSTEM } from "../src/core/access/permissions";

const EXT = readFileSync(join(import.meta.dir, "fixtures/ext-basic/hooks.ts"), "utf8");
const FAST = { RESD_JOB_POLL: "50", RESD_JOB_BACKOFF: "50", RESD_JOB_ATTEMPTS: "3", RESD_JOB_LEASE: "2" };
const def = (events: Record<string, string[]>) => ({
  fields: { title: { type: "text", required: true }, secret: { type: "text" } },
  hidden: "secret",
  events,
});

type Line = Record<string, any>;
const readLog = (dir: string): Line[] =>
  existsSync(join(dir, "hooks.log")) ? readFileSync(join(dir, "hooks.log"), "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l)) : [];
async function until<T>(what: string, fn: () => Promise<T | null | undefined | false> | T | null | undefined | false, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(30);
  }
}
const jobs = async (dir: string, env: Record<string, string> = {}) => {
  const r = await cli(dir, ["jobs", "list", "--json"], { env });
  if (r.code !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout).jobs as Line[];
};

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups) await c();
});

describe("queueing", () => {
  test("a committed write queues its job, which runs with the event's payload; a 422 queues nothing", async () => {
    const s = await adminSite({ defs: { articles: def({ create: ["job:notify"], delete: ["job:notify"] }) }, files: { "ext/hooks.ts": EXT }, env: FAST });
    cleanups.push(s.cleanup);
    const bad = await s.apiJson("POST", "/api/v1/articles", { secret: "x" });
    expect(bad.status).toBe(422);
    const conflict = await s.apiJson("POST", "/api/v1/articles", { title: "A", uuid: "11111111-1111-4111-8111-111111111111" });
    expect(conflict.status).toBe(201);
    const again = await s.apiJson("POST", "/api/v1/articles", { title: "B", uuid: "11111111-1111-4111-8111-111111111111" });
    expect(again.status).toBe(409);
    const list = await until("the job to finish", async () => {
      const l = await jobs(s.dir);
      return l.length && l.every((j) => j.state === "done") ? l : null;
    });
    // Exactly one job: from the one write that committed.
    expect(list.length).toBe(1);
    expect(list[0]).toMatchObject({ type: "notify", state: "done", attempts: 1, resource: "articles", action: "create", uuid: "11111111-1111-4111-8111-111111111111" });
    expect(list[0].payload.record.title).toBe("A");
    const ran = readLog(s.dir).filter((l) => l.kind === "job");
    expect(ran.length).toBe(1);
    expect(ran[0]).toMatchObject({ type: "notify", attempt: 1, maxAttempts: 3, action: "create", previous: null });
    expect(ran[0].record).toMatchObject({ title: "A" });
    expect(ran[0].record.secret).toBeUndefined();
  });
});

describe("retries and dead letters", () => {
  test("a failing job retries with backoff, ends dead, shows in `resd jobs list`, and `resd jobs retry` runs it again", async () => {
    const s = await adminSite({ defs: { articles: def({ create: ["job:flaky"] }) }, files: { "ext/hooks.ts": EXT }, env: FAST });
    cleanups.push(s.cleanup);
    expect((await s.apiJson("POST", "/api/v1/articles", { title: "F" })).status).toBe(201);
    const dead = await until("the job to be dead", async () => (await jobs(s.dir)).find((j) => j.state === "dead"));
    expect(dead.attempts).toBe(3);
    expect(dead.last_error).toContain("flaky failure on attempt 3");
    const attempts = readLog(s.dir).filter((l) => l.kind === "job");
    expect(attempts.map((a) => a.attempt)).toEqual([1, 2, 3]);
    // Exponential backoff (RESD_JOB_BACKOFF=50): at least 50 ms, then at least 100 ms between attempts.
    expect(attempts[1].at - attempts[0].at).toBeGreaterThanOrEqual(50);
    expect(attempts[2].at - attempts[1].at).toBeGreaterThanOrEqual(100);
    const text = await cli(s.dir, ["jobs", "list", "--state", "dead"]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(new RegExp(`^${dead.id}\\tdead\\tflaky\\tarticles/`));
    expect(text.stdout).toContain("attempts=3");

    writeFileSync(join(s.dir, "flaky.ok"), "");
    const retry = await cli(s.dir, ["jobs", "retry", String(dead.id), "--json"]);
    expect(retry.code).toBe(0);
    expect(JSON.parse(retry.stdout).job).toMatchObject({ id: dead.id, state: "queued", attempts: 0 });
    const done = await until("the retried job to finish", async () => (await jobs(s.dir)).find((j) => j.id === dead.id && j.state === "done"));
    expect(done.attempts).toBe(1);

    const missing = await cli(s.dir, ["jobs", "retry", "999"]);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain("job 999 does not exist");
  });

  test("the failure log names the job and the next retry", async () => {
    const s = await adminSite({ defs: { articles: def({ create: ["job:flaky"] }) }, files: { "ext/hooks.ts": EXT }, env: { ...FAST, RESD_JOB_ATTEMPTS: "2" } });
    cleanups.push(s.cleanup);
    await s.apiJson("POST", "/api/v1/articles", { title: "F" });
    await until("a dead job", async () => (await jobs(s.dir)).find((j) => j.state === "dead"));
    expect(s.output()).toMatch(/job 1 \(flaky\) attempt 1\/2 failed: flaky failure on attempt 1; retry at /);
    expect(s.output()).toMatch(/job 1 \(flaky\) attempt 2\/2 failed: .*dead-lettered/);
  });
});

describe("durability", () => {
  test("a job whose server was killed (-9) mid-job runs again after a restart, once the lease expired", async () => {
    const s = await adminSite({ defs: { articles: def({ create: ["job:slow"] }) }, files: { "ext/hooks.ts": EXT }, env: { ...FAST, HANG_JOBS: "1" } });
    cleanups.push(async () => rmSync(s.dir, { recursive: true, force: true }));
    expect((await s.apiJson("POST", "/api/v1/articles", { title: "S" })).status).toBe(201);
    await until("the job to start", () => readLog(s.dir).some((l) => l.kind === "job-start"));
    s.proc.kill("SIGKILL");
    await s.proc.exited;
    const left = await jobs(s.dir);
    expect(left).toMatchObject([{ type: "slow", state: "running", attempts: 1 }]);

    const back: Server = await serve(s.dir, { env: FAST });
    cleanups.push(async () => void (await back.stop()));
    const done = await until("the job to finish after restart", async () => (await jobs(s.dir)).find((j) => j.state === "done"));
    expect(done.attempts).toBe(2);
    const log = readLog(s.dir);
    expect(log.filter((l) => l.kind === "job-start").length).toBe(2);
    const finished = log.filter((l) => l.kind === "job");
    expect(finished.length).toBe(1);
    expect(finished[0]).toMatchObject({ attempt: 2, pid: back.proc.pid });
  });

  test("a job queued while no server runs (a write by library code, as an import does) runs once the server starts", async () => {
    const s = await adminSite({ defs: { articles: def({ create: ["job:notify"] }) }, files: { "ext/hooks.ts": EXT }, env: FAST });
    cleanups.push(async () => rmSync(s.dir, { recursive: true, force: true }));
    expect(await s.stop()).toBe(0);
    const site = await openSite(loadConfig({ dir: s.dir, env: { ...process.env, ...siteEnv(s.dir) } }));
    await createRecord(site, SYSTEM, "articles", { title: "Offline" });
    await site.close();
    expect(await jobs(s.dir)).toMatchObject([{ type: "notify", state: "queued", attempts: 0 }]);
    const back = await serve(s.dir, { env: FAST });
    cleanups.push(async () => void (await back.stop()));
    const done = await until("the job to finish", async () => (await jobs(s.dir)).find((j) => j.state === "done"));
    expect(done.payload.record.title).toBe("Offline");
    expect(readLog(s.dir).filter((l) => l.kind === "job").map((l) => l.record.title)).toEqual(["Offline"]);
  });
});

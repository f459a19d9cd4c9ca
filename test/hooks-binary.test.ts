/**
 * Extensions in the compiled binary: `bun build --compile` output, alone in an empty folder, loads
 * DIR/ext/hooks.ts from disk (Bun transpiles TypeScript at import time inside the executable too),
 * serves its route, delivers its event and runs its job.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { makeSite, ROOT } from "./helpers/site";
import { loneBinary } from "./helpers/binary";

let work: string;
let binary: string;
let dir: string;
let proc: ReturnType<typeof Bun.spawn> | null = null;

const run = async (args: string[]) => {
  const p = Bun.spawn([binary, ...args, "--dir", dir], { cwd: work, env: { PATH: "/usr/bin:/bin", HOME: work, TMPDIR: work }, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`${args.join(" ")}: ${stderr}`);
  return stdout.trim();
};

beforeAll(async () => {
  ({ work, binary } = await loneBinary("resd-hooks-bin-"));
  dir = makeSite({
    defs: { articles: { fields: { title: { type: "text", required: true } }, events: { create: ["article-saved", "job:notify"] } } },
    files: { "ext/hooks.ts": readFileSync(join(ROOT, "test/fixtures/ext-basic/hooks.ts"), "utf8") },
  });
}, 120_000);

afterAll(async () => {
  if (proc) {
    proc.kill("SIGTERM");
    await proc.exited;
  }
  rmSync(work, { recursive: true, force: true });
  rmSync(dir, { recursive: true, force: true });
});

test("the lone binary loads a TypeScript extension and runs its route, event and job", async () => {
  await run(["user", "add", "admin@example.com", "--password", "admin-password", "--role", "admin", "--api"]);
  const token = await run(["token", "admin@example.com"]);
  proc = Bun.spawn([binary, "serve", "--dir", dir, "--port", "0", "--host", "127.0.0.1"], {
    cwd: work, env: { PATH: "/usr/bin:/bin", HOME: work, TMPDIR: work, RESD_LOG_FORMAT: "text", RESD_JOB_POLL: "50" }, stdout: "pipe", stderr: "pipe",
  });
  let out = "";
  void (async () => { for await (const c of proc!.stdout as ReadableStream<Uint8Array>) out += new TextDecoder().decode(c); })();
  const deadline = Date.now() + 20_000;
  let base = "";
  while (!base) {
    base = /listening on (http:\/\/\S+)/.exec(out)?.[1] ?? "";
    if (!base && (proc.exitCode !== null || Date.now() > deadline)) throw new Error(`binary did not start: ${out}${await new Response(proc.stderr as ReadableStream).text()}`);
    await Bun.sleep(20);
  }
  const hello = await fetch(`${base}/hello/binary`);
  expect(await hello.json()).toMatchObject({ code: 200, greeting: "hello binary" });
  const created = await fetch(`${base}/api/v1/articles`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify({ title: "from the binary" }) });
  expect(created.status).toBe(201);
  const logFile = join(dir, "hooks.log");
  const end = Date.now() + 10_000;
  let kinds: string[] = [];
  while (Date.now() < end) {
    kinds = existsSync(logFile) ? readFileSync(logFile, "utf8").trim().split("\n").map((l) => JSON.parse(l).kind) : [];
    if (kinds.includes("event") && kinds.includes("job")) break;
    await Bun.sleep(30);
  }
  expect(kinds.sort()).toEqual(["event", "job"]);
}, 60_000);

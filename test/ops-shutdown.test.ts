/**
 * SIGTERM/SIGINT: a request in flight is answered, new connections are refused, the WAL is
 * checkpointed, the process exits 0; a second signal exits at once; the bound cuts a request that
 * never ends. The slow request is genuine: a create whose body the client sends slowly.
 */
import { afterEach, expect, test } from "bun:test";
import { existsSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { cli, makeSite, serve, type Server } from "./helpers/site";

const notes = { fields: { title: { type: "text", required: true } } };
const EMAIL = "admin@example.com";

let dirs: string[] = [];
afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

async function site(env: Record<string, string> = {}) {
  const dir = makeSite({ defs: { notes } });
  dirs.push(dir);
  expect((await cli(dir, ["user", "add", EMAIL, "--password", "admin-password", "--role", "admin", "--api"])).code).toBe(0);
  const token = (await cli(dir, ["token", EMAIL])).stdout.trim();
  const server = await serve(dir, { env });
  return { dir, token, server };
}

/** A raw HTTP/1.1 POST whose body arrives in two parts, so the request stays in flight in between. */
async function slowPost(server: Server, token: string, body: string) {
  const port = Number(new URL(server.base).port);
  let received = "";
  let closed!: () => void;
  const done = new Promise<void>((resolve) => (closed = resolve));
  const sock = await Bun.connect({
    hostname: "127.0.0.1",
    port,
    socket: {
      data(_s, d) { received += new TextDecoder().decode(d); },
      close() { closed(); },
      error() { closed(); },
    },
  });
  const bytes = new TextEncoder().encode(body);
  sock.write(`POST /api/v1/notes HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${bytes.length}\r\nConnection: close\r\n\r\n`);
  const half = Math.floor(bytes.length / 2);
  sock.write(bytes.subarray(0, half));
  sock.flush();
  return {
    finish: () => { sock.write(bytes.subarray(half)); sock.flush(); },
    response: async () => { await done; return received; },
    close: () => sock.end(),
  };
}

const exitedWithin = (proc: Server["proc"], ms: number) =>
  Promise.race([proc.exited.then((c) => ({ code: c })), Bun.sleep(ms).then(() => null)]);

test("SIGTERM during a slow request: it is answered and committed, new connections are refused, WAL checkpointed, exit 0", async () => {
  const { dir, token, server } = await site();
  const req = await slowPost(server, token, JSON.stringify({ uuid: "in-flight", title: "written during shutdown" }));
  await Bun.sleep(200);
  server.proc.kill("SIGTERM");
  await Bun.sleep(300);
  expect(server.proc.exitCode).toBeNull(); // still waiting for the request
  await expect(fetch(`${server.base}/health`)).rejects.toThrow(); // no longer accepting
  req.finish();
  const answer = await req.response();
  expect(answer).toStartWith("HTTP/1.1 201");
  expect(answer).toContain('"in-flight"');
  expect(await exitedWithin(server.proc, 5000)).toEqual({ code: 0 });
  const out = server.output();
  expect(out).toMatch(/POST \/api\/v1\/notes 201 /);
  expect(out).toContain("resd shutting down signal=SIGTERM");
  expect(out).toContain("resd stopped");
  const wal = join(dir, "data", "resd.db-wal");
  expect(!existsSync(wal) || statSync(wal).size === 0).toBe(true);
  // The record is in the database: a fresh server reads it.
  const again = await serve(dir);
  const r = await fetch(`${again.base}/api/v1/notes/in-flight`, { headers: { authorization: `Bearer ${token}` } });
  expect(r.status).toBe(200);
  expect(await again.stop()).toBe(0);
});

test("SIGINT behaves the same when idle: exit 0 at once", async () => {
  const { server } = await site();
  server.proc.kill("SIGINT");
  expect(await exitedWithin(server.proc, 5000)).toEqual({ code: 0 });
  expect(server.output()).toContain("signal=SIGINT");
});

test("a second signal exits at once, without waiting for the request in flight", async () => {
  const { token, server } = await site();
  const req = await slowPost(server, token, JSON.stringify({ title: "never finished" }));
  await Bun.sleep(200);
  server.proc.kill("SIGTERM");
  await Bun.sleep(300);
  expect(server.proc.exitCode).toBeNull();
  const t0 = performance.now();
  server.proc.kill("SIGTERM");
  expect(await exitedWithin(server.proc, 2000)).toEqual({ code: 143 });
  expect(performance.now() - t0).toBeLessThan(1000);
  expect(server.output()).toContain("second signal");
  req.close();
});

test("the shutdown bound (RESD_SHUTDOWN_TIMEOUT) cuts a request that never completes, then exits 0", async () => {
  const { token, server } = await site({ RESD_SHUTDOWN_TIMEOUT: "1" });
  const req = await slowPost(server, token, JSON.stringify({ title: "stalled" }));
  await Bun.sleep(200);
  const t0 = performance.now();
  server.proc.kill("SIGTERM");
  expect(await exitedWithin(server.proc, 5000)).toEqual({ code: 0 });
  const took = performance.now() - t0;
  expect(took).toBeGreaterThan(900);
  expect(took).toBeLessThan(4000);
  expect(server.output()).toContain("shutdown bound reached");
  req.close();
});

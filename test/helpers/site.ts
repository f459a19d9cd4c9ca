/**
 * Black-box test harness: a fresh site directory, the real CLI (`bun cli/main.ts …`) and the real
 * server on a free port of 127.0.0.1.
 */
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";

export const ROOT = resolve(import.meta.dir, "../..");
export const MAIN = join(ROOT, "cli/main.ts");

export type SiteOpts = {
  defs?: Record<string, unknown>;
  /** Extra files relative to the site directory. */
  files?: Record<string, string>;
  env?: Record<string, string>;
  /** "sqlite": the test looks into the SQLite file itself, so the site stays on SQLite in the PostgreSQL run too. */
  store?: "sqlite";
};

/**
 * With RESD_TEST_DATABASE_URL (a PostgreSQL server, e.g. postgres://resd@127.0.0.1:55432/postgres),
 * every site made here keeps its records in a database of its own there: the suite runs on both
 * stores (see .ci/run).
 */
const TEST_PG = process.env.RESD_TEST_DATABASE_URL ?? "";
const databases = new Map<string, string>();
export const onPostgres = TEST_PG !== "";

function newDatabase(): string {
  const name = `resd_t_${crypto.randomUUID().replace(/-/g, "").slice(0, 16)}`;
  const r = Bun.spawnSync(["psql", TEST_PG, "-qXc", `CREATE DATABASE ${name}`], { stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`cannot create a test database: ${r.stderr.toString()}`);
  const url = new URL(TEST_PG);
  url.pathname = `/${name}`;
  return url.toString();
}

/** The environment every resd process of a site gets (its test database, when testing on PostgreSQL). */
export function siteEnv(dir: string): Record<string, string> {
  const db = databases.get(dir);
  return db ? { RESD_DATABASE_URL: db } : {};
}

export function makeSite(opts: SiteOpts = {}): string {
  const dir = mkdtempSync(join(tmpdir(), "resd-test-"));
  if (TEST_PG && opts.store !== "sqlite") databases.set(dir, newDatabase());
  if (opts.defs) {
    mkdirSync(join(dir, "resources"), { recursive: true });
    for (const [name, def] of Object.entries(opts.defs)) writeFileSync(join(dir, "resources", `${name}.json`), JSON.stringify(def, null, 2));
  }
  for (const [rel, text] of Object.entries(opts.files ?? {})) {
    mkdirSync(join(dir, rel, ".."), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
  return dir;
}

export type CliResult = { code: number; stdout: string; stderr: string };

export async function cli(dir: string, args: string[], opts: { env?: Record<string, string>; stdin?: string } = {}): Promise<CliResult> {
  const p = Bun.spawn([process.execPath, MAIN, ...args, "--dir", dir], {
    cwd: dir,
    env: { ...process.env, ...siteEnv(dir), ...opts.env },
    stdin: opts.stdin !== undefined ? new TextEncoder().encode(opts.stdin) : "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, stdout, stderr };
}

export type Server = {
  dir: string;
  base: string;
  proc: Subprocess;
  output: () => string;
  /** What the server wrote to stderr only. */
  errors: () => string;
  stop: () => Promise<number>;
};

export async function serve(dir: string, opts: { env?: Record<string, string>; args?: string[] } = {}): Promise<Server> {
  const proc = Bun.spawn([process.execPath, MAIN, "serve", "--dir", dir, "--port", "0", "--host", "127.0.0.1", ...(opts.args ?? [])], {
    cwd: dir,
    env: { ...process.env, RESD_LOG_FORMAT: "text", ...siteEnv(dir), ...opts.env },
    stdout: "pipe",
    stderr: "pipe",
  });
  let out = "";
  let err = "";
  const drain = async (s: ReadableStream<Uint8Array>, add: (t: string) => void) => {
    const dec = new TextDecoder();
    for await (const chunk of s) add(dec.decode(chunk));
  };
  void drain(proc.stdout as ReadableStream<Uint8Array>, (t) => (out += t));
  void drain(proc.stderr as ReadableStream<Uint8Array>, (t) => (err += t));
  const deadline = Date.now() + 20_000;
  let base = "";
  while (!base) {
    const m = /listening on (http:\/\/[^\s]+)/.exec(out);
    if (m) base = m[1];
    else if (proc.exitCode !== null) throw new Error(`server exited ${proc.exitCode}: ${err}${out}`);
    else if (Date.now() > deadline) throw new Error(`server did not start: ${err}${out}`);
    else await Bun.sleep(20);
  }
  return {
    dir,
    base,
    proc,
    output: () => out + err,
    errors: () => err,
    stop: async () => {
      proc.kill("SIGTERM");
      const t = setTimeout(() => proc.kill("SIGKILL"), 8000);
      const code = await proc.exited;
      clearTimeout(t);
      return code;
    },
  };
}

/** A site with an admin (API access) and its bearer token, served. */
export async function adminSite(opts: SiteOpts & { serveArgs?: string[] } = {}) {
  const dir = makeSite(opts);
  const email = "admin@example.com";
  const add = await cli(dir, ["user", "add", email, "--password", "admin-password", "--role", "admin", "--api"], { env: opts.env });
  if (add.code !== 0) throw new Error(`user add failed: ${add.stderr}`);
  // The token and the server's start-up side by side: both only read the site `user add` made
  // (its schema, the admin, DIR/.env's signing key), and each is a process of its own.
  const [tok, server] = await Promise.all([cli(dir, ["token", email], { env: opts.env }), serve(dir, { env: opts.env, args: opts.serveArgs })]);
  if (tok.code !== 0) {
    await server.stop();
    throw new Error(`token failed: ${tok.stderr}`);
  }
  const token = tok.stdout.trim();
  const api = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    fetch(server.base + path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    });
  const apiJson = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await api(method, path, body, headers);
    return { status: res.status, headers: res.headers, body: res.status === 304 ? null : ((await res.json()) as Record<string, any>) };
  };
  return {
    ...server, token, email, api, apiJson,
    cleanup: async () => { await server.stop(); rmSync(dir, { recursive: true, force: true }); },
  };
}

/** Helpers of the access tests: plain fetches, logins, and users with given roles. */
import { cli } from "./site";

export type Reply = { status: number; headers: Headers; body: Record<string, any> | null };

export async function call(base: string, method: string, path: string, opts: { body?: unknown; token?: string; headers?: Record<string, string> } = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}), ...opts.headers };
  if (opts.body !== undefined) headers["content-type"] ??= "application/json";
  const res = await fetch(base + path, {
    method, headers, redirect: "manual",
    body: opts.body === undefined ? undefined : typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body),
  });
  const text = await res.text();
  let body: Record<string, any> | null = null;
  try { body = text ? JSON.parse(text) : null; } catch { body = { raw: text }; }
  return { status: res.status, headers: res.headers, body };
}

export async function tokenFor(base: string, email: string, password: string): Promise<string> {
  const r = await call(base, "POST", "/api/v1/auth/token", { body: { email, password } });
  if (r.status !== 200) throw new Error(`token for ${email}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body!.token as string;
}

/** Adds a user through the CLI (the server may be running: both share the SQLite file). */
export async function addUser(dir: string, email: string, password: string, opts: { role?: string; api?: boolean } = {}) {
  const args = ["user", "add", email, "--password", password, "--json"];
  if (opts.role) args.push("--role", opts.role);
  if (opts.api) args.push("--api");
  const r = await cli(dir, args);
  if (r.code !== 0) throw new Error(`user add ${email}: ${r.stderr}`);
  return JSON.parse(r.stdout) as { uuid: string; email: string };
}

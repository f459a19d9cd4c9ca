/**
 * The only way the admin pages talk to the server: the public API and the internal endpoints, with
 * the session cookie. A 401 sends the user to sign-in and back to the page they were on.
 */
import { navigate, location } from "./router";

export type Envelope = { code: number; success: boolean; status: string; message?: string; details?: string; total?: number; count?: number; errors?: Record<string, string>; needs?: string[] } & Record<string, unknown>;

export class ApiError extends Error {
  /** `headers`: the answer's (a 412 names the record's current version in `etag`). */
  constructor(readonly status: number, readonly body: Envelope, readonly headers: Headers = new Headers()) {
    super(body.details || body.message || `HTTP ${status}`);
  }
}

export function signInPath(): string {
  const here = location.value.path + location.value.search;
  return here.startsWith("/admin/sign-in") ? here : `/admin/sign-in?next=${encodeURIComponent(here)}`;
}

export async function api<T extends Envelope = Envelope>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: T; headers: Headers }> {
  const init: RequestInit = { method, credentials: "same-origin", headers: { accept: "application/json", ...headers }, cache: "no-store" };
  if (body instanceof FormData) init.body = body;
  else if (body !== undefined) {
    init.body = JSON.stringify(body);
    (init.headers as Record<string, string>)["content-type"] = "application/json";
  }
  const res = await fetch(`/api/v1${path}`, init);
  if (res.status === 304) return { status: 304, body: {} as T, headers: res.headers };
  const parsed = (await res.json().catch(() => ({ code: res.status, success: false, status: "error", message: res.statusText }))) as T;
  if (res.status === 401 && !path.startsWith("/session")) {
    navigate(signInPath(), true);
  }
  if (!res.ok) throw new ApiError(res.status, parsed, res.headers);
  return { status: res.status, body: parsed, headers: res.headers };
}

/** A query string from pairs, leaving out empty values. */
export function query(params: Record<string, string | number | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}

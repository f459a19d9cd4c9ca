/**
 * Who may keep an answer. An answer to a caller with credentials (a bearer token or the session
 * cookie) is that caller's alone: `private` keeps it out of shared caches, which could otherwise
 * hand it on after sign-out. Answers without credentials may be kept by any cache, as long as it
 * asks again each time (`no-cache` with the ETag/Last-Modified the reads send). `Vary` names the
 * credentials on both, so that no cache serves one caller's answer to another. Errors are never
 * kept. Routes that chose their own policy (media, exports, tokens, the admin's internal endpoints)
 * keep it, without a Vary added.
 */
import { SESSION_COOKIE } from "../core/access/sessions";

const VARY = "Authorization, Cookie";

const hasSession = (request: Request) => request.headers.get("cookie")?.includes(`${SESSION_COOKIE}=`) === true;

/** Whether the request carries credentials that may make its answer the caller's own. */
export const credentialed = (request: Request) => request.headers.has("authorization") || hasSession(request);

export function cachePolicyFor(request: Request, status: number): string {
  if (status >= 400) return "no-store";
  return credentialed(request) ? "private, no-cache" : "no-cache";
}

export function withCachePolicy(res: Response, request: Request): Response {
  // A route's own policy stands: `no-store` needs no Vary, and public media must stay shared.
  if (res.headers.has("cache-control")) return res;
  res.headers.set("cache-control", cachePolicyFor(request, res.status));
  res.headers.append("vary", VARY);
  return res;
}

/** The same as headers of an answer built here (the record read's hot path sets them at once). */
export const cacheHeaders = (request: Request, status: number) => ({ "cache-control": cachePolicyFor(request, status), vary: VARY });

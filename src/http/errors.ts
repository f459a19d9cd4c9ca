/** The one mapper from anything thrown to the error envelope. Internals never reach the client. */
import { AppError } from "../core/errors";
import { json } from "./envelope";
import { logError } from "./logging";

export function errorResponse(e: unknown, t0: number, requestId: string): Response {
  if (e instanceof AppError) {
    // A domain error of the server's own making (a failed commit, a busy database) is the operator's business too.
    if (e.status >= 500) logError(requestId, e);
    const body: Record<string, unknown> = { message: e.code, request_id: requestId };
    if (e.details) body.details = e.details;
    if (e.extra.errors) body.errors = e.extra.errors;
    if (e.extra.needs) body.needs = e.extra.needs.join(",");
    for (const [k, v] of Object.entries(e.extra)) if (!["errors", "needs", "retryAfter"].includes(k)) body[k] = v;
    const headers: Record<string, string> = e.extra.retryAfter ? { "retry-after": String(e.extra.retryAfter) } : {};
    return json(e.status, body, t0, headers);
  }
  // The client gets only the request id; the operator finds the stack under it, once, on stderr.
  logError(requestId, e);
  return json(500, { message: "INTERNAL_ERROR", request_id: requestId, details: "the server failed; see its log with this request_id" }, t0);
}

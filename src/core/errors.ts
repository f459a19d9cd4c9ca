/**
 * The one domain error type. Core code throws it; `src/http/errors.ts` maps it to the envelope and
 * the CLI prints it. `message` is always one of the spec's message codes, never free text: clients
 * switch on it. Human-readable detail goes in `details` (safe to show) or `errors` (per field).
 */
export type MessageCode =
  | "INVALID_DATA"
  | "UNAUTHORIZED"
  | "INVALID_CREDENTIALS"
  | "ACCESS_DENIED"
  | "RESOURCE_NOT_FOUND"
  | "METHOD_NOT_ALLOWED"
  | "RESOURCE_EXISTS"
  /** 409 for a state conflict that is no existing record (the spec lists CONFLICT for 409 too). */
  | "CONFLICT"
  | "PRECONDITION_FAILED"
  | "REQUEST_TIMEOUT"
  | "UPLOAD_TOO_LARGE"
  | "UNSUPPORTED_MEDIA_TYPE"
  | "TOO_MANY_REQUESTS"
  | "SERVICE_UNAVAILABLE"
  | "BAD_GATEWAY"
  | "RESOURCE_CREATE_FAILED"
  | "RESOURCE_UPDATE_FAILED"
  | "INTERNAL_ERROR";

export type FieldErrors = Record<string, string>;

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: MessageCode,
    /** A short human sentence, safe to show to the caller. */
    readonly details?: string,
    readonly extra: { errors?: FieldErrors; needs?: string[]; retryAfter?: number; [k: string]: unknown } = {},
  ) {
    super(details ? `${code}: ${details}` : code);
    this.name = "AppError";
  }
}

export const badRequest = (details: string) => new AppError(400, "INVALID_DATA", details);
export const notFound = (details = "not found") => new AppError(404, "RESOURCE_NOT_FOUND", details);
export const conflict = (details: string) => new AppError(409, "RESOURCE_EXISTS", details);
export const denied = (needs: string[], details = "permission required") =>
  new AppError(403, "ACCESS_DENIED", details, { needs });
/** 405 for a path that exists but not with this method; `allow` lists the methods it takes. */
export const methodNotAllowed = (allow: string) => new AppError(405, "METHOD_NOT_ALLOWED", `this path supports ${allow}`, { allow });
export const unauthorized = (details = "missing or invalid credentials") => new AppError(401, "UNAUTHORIZED", details);

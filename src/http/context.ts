/**
 * Every route runs through `handle`: it times the request, names it, works out the caller and maps
 * whatever is thrown to the error envelope in one place.
 */
import type { Principal } from "../core/access/permissions";
import type { Site } from "../core/site";
import { AppError, badRequest } from "../core/errors";
import { authenticate } from "./auth";
import { errorResponse } from "./errors";
import { withCachePolicy } from "./cache-control";
import { bodyBytes } from "./upload-body";
import { jsonDepthExceeds, MAX_JSON_DEPTH } from "../core/validation/json-depth";
import { mayHoldSurrogateEscape, UNPAIRED_SURROGATE, unpairedSurrogateAt } from "../core/validation/unicode";

export type Ctx = {
  site: Site;
  request: Request;
  t0: number;
  requestId: string;
  /** The caller, resolved on first use. */
  principal(): Promise<Principal>;
  /** Sets the caller when it is known without waiting (see knownPrincipal). */
  know(p: Principal): void;
  /** The JSON body, within RESD_MAX_UPLOAD. */
  json(): Promise<unknown>;
  url(): URL;
};

/** Per-request facts the request log reads after the answer (see logging). */
export const requestInfo = new WeakMap<Request, { id: string; user: string }>();

export function makeCtx(site: Site, request: Request): Ctx {
  let p: Promise<Principal> | null = null;
  let u: URL | null = null;
  const requestId = requestIdOf(request);
  const info = { id: requestId, user: "anonymous" };
  requestInfo.set(request, info);
  return {
    site,
    request,
    t0: performance.now(),
    requestId,
    principal: () =>
      (p ??= authenticate(site, request).then((principal) => {
        info.user = principal.email ?? principal.kind;
        return principal;
      })),
    know: (known) => {
      p = Promise.resolve(known);
      info.user = known.email ?? known.kind;
    },
    url: () => (u ??= new URL(request.url)),
    json: () => readJson(request, site.config.maxUpload),
  };
}

/** The client's X-Request-Id (at most 64 characters), else a new one. */
export const requestIdOf = (request: Request): string => request.headers.get("x-request-id")?.slice(0, 64) || crypto.randomUUID();

export async function handle(site: Site, request: Request, fn: (c: Ctx) => Promise<Response> | Response): Promise<Response> {
  const c = makeCtx(site, request);
  try {
    return withRequestId(withCachePolicy(await fn(c), request), c.requestId);
  } catch (e) {
    return withRequestId(withCachePolicy(errorResponse(e, c.t0, c.requestId), request), c.requestId);
  }
}

export function withRequestId(res: Response, id: string): Response {
  res.headers.set("x-request-id", id);
  return res;
}

/**
 * Reads a JSON body within `max` bytes (413 past it, decided while reading); an empty body is an
 * empty object, anything unparsable is 400, text that is not valid Unicode 422.
 */
export async function readJson(request: Request, max = Number.MAX_SAFE_INTEGER): Promise<unknown> {
  const bytes = await bodyBytes(request, max);
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8");
  if (text.trim() === "") return {};
  if (jsonDepthExceeds(text)) throw badRequest(`the body nests deeper than ${MAX_JSON_DEPTH} levels`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest("the body is not valid JSON");
  }
  // Refused here for every endpoint (sign-in, bulk keys…), not only where records are validated.
  const at = mayHoldSurrogateEscape(text) ? unpairedSurrogateAt(value) : null;
  if (at !== null) throw new AppError(422, "INVALID_DATA", "one or more fields are invalid", { errors: { [at || "(body)"]: UNPAIRED_SURROGATE } });
  return value;
}

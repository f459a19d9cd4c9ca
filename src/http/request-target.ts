/**
 * One absolute URL for every request, before routing. Bun hands over the request target as it came
 * when the Host header is missing (HTTP/1.0) or not a valid host: `/static/img/api/v1/notes/x`.
 * Routers that cut the path at a fixed offset of an absolute URL then route one path, permissions
 * see another and the log a third; `new URL(request.url)` throws. Here the URL is rebuilt on the
 * request's own host when valid, else on a fixed base, and a target that is not an origin-form path
 * (`/…`) or an absolute http(s) URL is answered 400 — so routing, permissions and logs all see the
 * same path.
 */
import { badRequest } from "../core/errors";
import { carryBodyWatch } from "./upload-body";

/** Used when the request names no valid host; links built from it are relative in spirit only. */
export const FALLBACK_ORIGIN = "http://localhost";

function hostOrigin(host: string | null): string {
  if (!host) return FALLBACK_ORIGIN;
  const u = URL.parse(`http://${host}/`);
  // `a/b` parses as host a with path /b, `a:99999` not at all: both are not a host.
  return u && u.host === host.toLowerCase() && u.pathname === "/" ? `http://${u.host}` : FALLBACK_ORIGIN;
}

/**
 * Elysia finds the path as the first "/" from offset 11 of the URL (past "https://" and a short
 * host): an origin shorter than that (`http://x`, `http://a:1`) would lose the path's first segment.
 */
const ROUTER_PATH_OFFSET = 11;

/**
 * A path whose percent-escapes do not decode to UTF-8 (`/api/v1/notes/%ED%A0%80`, a lone
 * surrogate) names nothing resd could store or route: the router's decoding would throw later.
 */
function checkDecodable(url: string): void {
  const q = url.indexOf("?");
  const path = q < 0 ? url : url.slice(0, q);
  if (!path.includes("%")) return;
  try {
    decodeURIComponent(path);
  } catch {
    throw badRequest("the request path is not valid UTF-8 once percent-decoded");
  }
}

/** The request with a well-formed absolute URL, or throws 400 for a target that is not a path. */
export function normalizeTarget(request: Request): Request {
  const raw = request.url; // built anew by Bun at each access: read once
  checkDecodable(raw);
  if (raw.startsWith("http://") || raw.startsWith("https://")) {
    const u = URL.parse(raw);
    if (u && u.origin.length < ROUTER_PATH_OFFSET) return rebuild(request, u.pathname + u.search, FALLBACK_ORIGIN);
    if (u) return u.href === raw ? request : carryBodyWatch(request, new Request(u.href, request));
    // An absolute URL with a host Bun took but URL cannot parse (a port past 65535): keep the path.
    const slash = raw.indexOf("/", raw.indexOf("//") + 2);
    return rebuild(request, slash < 0 ? "/" : raw.slice(slash), FALLBACK_ORIGIN);
  }
  if (!raw.startsWith("/") || raw.startsWith("//")) throw badRequest("the request target must be a path starting with /");
  return rebuild(request, raw, hostOrigin(request.headers.get("host")));
}

function rebuild(request: Request, target: string, origin: string): Request {
  const u = URL.parse(target, origin);
  if (!u || u.origin !== origin) throw badRequest("the request target must be a path starting with /");
  return carryBodyWatch(request, new Request(u.href, request));
}

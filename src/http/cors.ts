/**
 * Cross-origin access for browser clients on other sites, off unless RESD_CORS_ORIGINS names them.
 * Credentials are never allowed cross-origin: such clients use bearer tokens, and a session cookie
 * never travels with a cross-site request (see the session's Origin check).
 */
const ALLOW_HEADERS = "authorization, content-type, if-match, if-modified-since, if-none-match, if-unmodified-since, last-event-id, range, x-request-id";
const EXPOSE_HEADERS = "last-modified, etag, content-disposition, content-range, x-request-id, retry-after";

export function parseOrigins(raw: string): Set<string> | "*" {
  if (raw.trim() === "*") return "*";
  return new Set(raw.split(",").map((s) => s.trim().replace(/\/+$/, "")).filter(Boolean));
}

type Answer = (r: Request) => Response | Promise<Response>;

export function withCors(originsSetting: string, fetch: Answer): Answer {
  const origins = parseOrigins(originsSetting);
  if (origins !== "*" && origins.size === 0) return fetch;
  const allowed = (o: string | null): o is string => !!o && (origins === "*" || origins.has(o));
  return async (request) => {
    const origin = request.headers.get("origin");
    if (request.method === "OPTIONS" && request.headers.has("access-control-request-method")) {
      if (!allowed(origin)) return new Response(null, { status: 403, headers: { vary: "Origin" } });
      return new Response(null, {
        status: 204,
        headers: {
          "access-control-allow-origin": origin,
          "access-control-allow-methods": "GET, HEAD, POST, PUT, PATCH, DELETE",
          "access-control-allow-headers": ALLOW_HEADERS,
          "access-control-max-age": "600",
          vary: "Origin",
        },
      });
    }
    const res = await fetch(request);
    if (allowed(origin)) {
      res.headers.set("access-control-allow-origin", origin);
      res.headers.set("access-control-expose-headers", EXPOSE_HEADERS);
      res.headers.append("vary", "Origin");
    }
    return res;
  };
}

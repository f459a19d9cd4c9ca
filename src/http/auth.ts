/**
 * Works out who is calling: a bearer token or API key, else the session cookie, else an anonymous
 * visitor. A cookie-authenticated write from another origin is refused here, so a page on another
 * site cannot act with a signed-in user's cookie. A member of a role that requires two-factor
 * sign-in who has not enrolled is refused here too, on every route but enrolment's.
 */
import type { Principal } from "../core/access/permissions";
import { knownTokenPrincipal, tokenPrincipal } from "../core/access/tokens";
import { anonymousPrincipal } from "../core/access/anonymous";
import { apiKeyPrincipal, isApiKey, knownApiKeyPrincipal } from "../core/access/api-keys";
import { enrolFirst } from "../core/access/users";
import { SESSION_COOKIE, sessionPrincipal } from "../core/access/sessions";
import type { Site } from "../core/site";
import { AppError, unauthorized } from "../core/errors";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** The value of one cookie, without parsing the whole header into an object. */
export function cookieValue(request: Request, name: string): string | null {
  const header = request.headers.get("cookie");
  if (!header) return null;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return safeDecode(part.slice(eq + 1).trim());
  }
  return null;
}

/** A malformed escape is kept as written: it simply matches no session. */
function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** Was the request made over https (directly, or per a proxy's X-Forwarded-Proto)? */
export function isHttps(request: Request): boolean {
  const fwd = request.headers.get("x-forwarded-proto");
  if (fwd) return fwd.split(",")[0].trim().toLowerCase() === "https";
  return new URL(request.url).protocol === "https:";
}

/**
 * True unless the browser says the request comes from another origin. Browsers send `Origin` on
 * every cross-origin write; requests without it (curl, scripts) are not from a foreign page.
 */
export function sameOrigin(request: Request): boolean {
  const origin = request.headers.get("origin");
  if (!origin) return request.headers.get("sec-fetch-site") !== "cross-site";
  if (origin === "null") return false;
  const host = request.headers.get("x-forwarded-host")?.split(",")[0].trim() ?? request.headers.get("host") ?? new URL(request.url).host;
  try {
    const o = new URL(origin);
    return o.host.toLowerCase() === host.toLowerCase() && (o.protocol === "https:") === isHttps(request);
  } catch {
    return false;
  }
}

export const crossOriginRefused = () => new AppError(403, "ACCESS_DENIED", "a request authenticated by the session cookie must come from this site's own pages (Origin)");

const BEARER = /^Bearer\s+(\S+)$/i;

/**
 * `enrolling`: the caller may be a member who must enrol in two-factor sign-in first (the enrolment
 * routes); everywhere else such a caller gets 403 with `needs` "2fa".
 */
export async function authenticate(site: Site, request: Request, opts: { enrolling?: boolean } = {}): Promise<Principal> {
  const p = await caller(site, request);
  if (p.mustEnrol2fa && !opts.enrolling) throw enrolFirst();
  return p;
}

async function caller(site: Site, request: Request): Promise<Principal> {
  const header = request.headers.get("authorization");
  if (header) {
    const m = BEARER.exec(header);
    if (!m) throw unauthorized("the Authorization header must be `Bearer <token>`");
    return isApiKey(m[1]) ? apiKeyPrincipal(site, m[1]) : tokenPrincipal(site, m[1]);
  }
  const cookie = cookieValue(request, SESSION_COOKIE);
  if (cookie) {
    const p = await sessionPrincipal(site, cookie);
    if (p) {
      if (!SAFE_METHODS.has(request.method) && !sameOrigin(request)) throw crossOriginRefused();
      return p;
    }
  }
  return anonymousPrincipal(site);
}

/**
 * The caller when that is known without waiting: a bearer token checked before (and nothing it
 * depends on changed since), or an anonymous visitor who sends no session cookie. Null otherwise
 * (callers who must enrol first): `authenticate` decides, with its errors.
 */
export function knownPrincipal(site: Site, request: Request): Principal | null {
  const header = request.headers.get("authorization");
  if (header) {
    const m = BEARER.exec(header);
    const known = m ? (isApiKey(m[1]) ? knownApiKeyPrincipal(site, m[1]) : knownTokenPrincipal(site, m[1])) : null;
    return known && !known.mustEnrol2fa ? known : null;
  }
  return cookieValue(request, SESSION_COOKIE) ? null : anonymousPrincipal(site);
}

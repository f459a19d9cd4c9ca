/**
 * The security headers of every answer, set in this one place (see docs/access.md, "Security
 * headers"):
 *
 * - every answer: `X-Content-Type-Options: nosniff`, so a browser never takes an answer for another
 *   type than the one it is sent as (JSON, an upload, an error run as script or markup), and
 *   `Referrer-Policy: strict-origin-when-cross-origin`, so a page of ours sends its full URL only
 *   to us: elsewhere (a tile server, a link followed) only our origin, never the record ids and
 *   searches of admin URLs. Not `no-referrer` or `same-origin`: tile servers such as
 *   OpenStreetMap's refuse tiles asked for without a Referer.
 * - `/admin` and `/swagger` and everything under them (pages, assets, their errors): a
 *   Content-Security-Policy of their own that allows no inline script and no framing
 *   (`frame-ancestors 'none'`), with `X-Frame-Options: DENY` for browsers that predate it. A page
 *   that holds a session must not be framed by another (clickjacking). Media and API answers stay
 *   frameable: a site may show its own files in a frame.
 */
import type { Config } from "../core/config";

type Answer<R extends Request = Request> = (request: R) => Response | Promise<Response>;
type HeaderList = readonly (readonly [name: string, value: string])[];

const EVERY: HeaderList = [
  ["x-content-type-options", "nosniff"],
  ["referrer-policy", "strict-origin-when-cross-origin"],
];

/**
 * Tiptap (the html editor) adds its base stylesheet as an inline <style> (ProseMirror's whitespace
 * and cursor rules; the admin stylesheet does not repeat them). Its hash admits exactly that text
 * and no other inline style, so `'unsafe-inline'` is not needed. The text is `style` of
 * @tiptap/core 3.34.0 (pinned in package.json); test/security-headers.test.ts recomputes the hash
 * from the installed package and checks the editor's stylesheet is in force.
 */
export const TIPTAP_STYLE_HASH = "'sha256-PlumsSlvJ7vvWzjqibGAYKq92O3y/4JTxWWsWJvyUYA='";

/** What both pages refuse: script of any other kind than our files, plugins, <base>, forms elsewhere, framing. */
const STRICT = ["default-src 'self'", "script-src 'self'", "connect-src 'self'", "object-src 'none'", "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'"];

/**
 * The origin of the map's tile server (RESD_MAP_TILES), as a CSP source; none for a template on our
 * own origin (a path). Only an origin that is exactly scheme, host and port is used: the setting
 * allows any character a URL may hold, and a `;` or `'` would change the policy.
 */
export function tileSource(mapTiles: string): string | null {
  if (!/^https?:\/\//.test(mapTiles)) return null;
  const origin = URL.parse(mapTiles)?.origin ?? "";
  return /^https?:\/\/(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(:\d{1,5})?$/.test(origin) ? origin : null;
}

/**
 * The admin pages' policy. img-src: `data:` for the page's empty icon (`<link rel="icon"
 * href="data:,">`), the tile server for the map's tiles; media and thumbnails are ours.
 * style-src: our stylesheet and Tiptap's (above); the style attributes the pages and the editor set
 * are set through the CSSOM (element.style), which a policy does not govern.
 */
export function adminPolicy(mapTiles: string): string {
  const tiles = tileSource(mapTiles);
  return [...STRICT, `style-src 'self' ${TIPTAP_STYLE_HASH}`, `img-src 'self' data:${tiles ? ` ${tiles}` : ""}`].join("; ");
}

/**
 * Swagger UI's policy. img-src: `data:` for the icons of its stylesheet, `blob:` for an image
 * answer shown by "Try it out". Its inline styles are set through the CSSOM (React's style
 * property), which a policy does not govern.
 */
export const SWAGGER_POLICY = [...STRICT, "style-src 'self'", "img-src 'self' data: blob:"].join("; ");

const framed = (policy: string): HeaderList => [...EVERY, ["content-security-policy", policy], ["x-frame-options", "DENY"]];

function stamp(res: Response, headers: HeaderList): Response {
  for (const [name, value] of headers) res.headers.set(name, value);
  return res;
}

/** An answer that stamps its responses; one ready at once is stamped without a promise in between (the GET-one path). */
function stamping<R extends Request>(answer: Answer<R>, headers: (request: R) => HeaderList): Answer<R> {
  return (request) => {
    const res = answer(request);
    return res instanceof Response ? stamp(res, headers(request)) : res.then((r) => stamp(r, headers(request)));
  };
}

/** The pages with a policy of their own: a path prefix, and its headers. */
type Pages = readonly (readonly [prefix: string, headers: HeaderList])[];

/**
 * The headers of a path: the first segment as the router matches it (case and escapes as sent;
 * `/admin` and `/admin/…`, not `/administrator`). Read from the URL string without parsing it: this
 * runs for every request. A target Bun did not place on a host starts with the path.
 */
function headersOf(url: string, pages: Pages): HeaderList {
  const start = url.charCodeAt(0) === 47 ? 0 : url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) return EVERY;
  for (const [prefix, headers] of pages) {
    if (!url.startsWith(prefix, start)) continue;
    const next = url.charCodeAt(start + prefix.length);
    if (Number.isNaN(next) || next === 47 || next === 63 || next === 35) return headers; // end, "/", "?", "#"
  }
  return EVERY;
}

/**
 * Wraps what Bun.serve answers with, the route table and the general fetch alike, so no answer
 * leaves without its headers. A route's headers are decided once, from its path pattern.
 */
export function withSecurityHeaders<Routes extends Record<string, Answer<never>>>(
  config: Pick<Config, "mapTiles">,
  served: { routes: Routes; fetch: Answer },
): { routes: Routes; fetch: Answer } {
  const pages: Pages = [["/admin", framed(adminPolicy(config.mapTiles))], ["/swagger", framed(SWAGGER_POLICY)]];
  const routes: Record<string, Answer<never>> = {};
  for (const [path, answer] of Object.entries(served.routes)) {
    const headers = headersOf(path, pages);
    routes[path] = stamping(answer, () => headers);
  }
  return { routes: routes as Routes, fetch: stamping(served.fetch, (request) => headersOf(request.url, pages)) };
}

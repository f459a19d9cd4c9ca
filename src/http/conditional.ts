/**
 * Last-Modified / If-Modified-Since. HTTP dates have whole seconds, so a change in the current second
 * could follow this answer unseen: such an answer names the previous second, which can never
 * produce a wrong 304.
 */
export function lastModifiedHeader(ms: number): string {
  const sec = Math.floor(ms / 1000);
  const sent = sec >= Math.floor(Date.now() / 1000) ? sec - 1 : sec;
  return new Date(Math.max(sent, 0) * 1000).toUTCString();
}

export function notModified(request: Request, ms: number): boolean {
  const ims = request.headers.get("if-modified-since");
  if (!ims) return false;
  const since = Date.parse(ims);
  return Number.isFinite(since) && Math.floor(ms / 1000) <= Math.floor(since / 1000);
}

/**
 * The entity tag of an answer: weak, since each answer's envelope carries its own timing fields,
 * but exact where Last-Modified is not — it changes with every write, not with every second.
 *
 * A record's tag is built from the stored row, hidden and encrypted fields included; an unkeyed hash
 * of it would let a reader try every value of a short hidden field offline against one tag. So the
 * hash is keyed (HMAC-SHA-256) with a key derived from the site's token secret: the same on every
 * instance of a site, unknown to callers.
 */
const etagKeys = new WeakMap<object, Uint8Array>();
function etagKey(site: { config: { tokenSecret: string } }): Uint8Array {
  let key = etagKeys.get(site);
  if (!key) {
    key = new Uint8Array(new Bun.CryptoHasher("sha256", site.config.tokenSecret).update("resd entity tags").digest());
    etagKeys.set(site, key);
  }
  return key;
}

export function weakEtag(site: { config: { tokenSecret: string } }, ...parts: (string | number)[]): string {
  const mac = new Bun.CryptoHasher("sha256", etagKey(site)).update(parts.join("\u0000")).digest("hex");
  return `W/"${mac.slice(0, 24)}"`;
}

/** If-None-Match (weak comparison, `*` included) holds the tag. */
export function etagMatches(request: Request, etag: string): boolean {
  const inm = request.headers.get("if-none-match");
  if (!inm) return false;
  const bare = (t: string) => t.trim().replace(/^W\//, "");
  return inm.split(",").some((t) => t.trim() === "*" || bare(t) === bare(etag));
}

/**
 * 304 when the caller holds the current version: If-None-Match decides when sent (RFC 9110
 * 13.2.2), else If-Modified-Since.
 */
export const isNotModified = (request: Request, etag: string, ms: number) =>
  request.headers.has("if-none-match") ? etagMatches(request, etag) : notModified(request, ms);

export const notModifiedResponse = (lastModified: string, etag?: string) =>
  new Response(null, { status: 304, headers: etag ? { "last-modified": lastModified, etag } : { "last-modified": lastModified } });

import type { StoredRecord } from "../core/store/types";

/**
 * Last-Modified / If-Modified-Since. HTTP dates have whole seconds, so a change in the current second
 * could follow this answer unseen: such an answer names the previous second, which can never
 * produce a wrong 304. `leadSec` (a list's, Store.changeLead): commits that may still reach the
 * answer that late (another instance's, its notice on its way) may have marked any of the last
 * seconds: an answer whose mark is that recent names the second before them.
 */
export function lastModifiedHeader(ms: number, leadSec = 0): string {
  const sec = Math.floor(ms / 1000);
  const earliest = Math.floor(Date.now() / 1000) - leadSec;
  const sent = sec >= earliest ? earliest - 1 : sec;
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

/**
 * What a page of records holds, for its list's tag. The change mark alone may count a commit the
 * page does not hold yet (another instance's, before its notice reaches this one; or this
 * instance's, before it is revised into the kept pages): the same mark then named the old page and,
 * once revised, the new one, and a client holding the old page was told it was current. A row is
 * named by its uuid, `_modified` and stored JSON: `_modified` has whole seconds, so two writes of a
 * second differ only in their data. Once per rows array: a cached page shares its array between
 * answers. A revised page is a new array of mostly the same rows (rows are never changed in
 * place), so each row's part is kept with the row: joining and hashing 20 rows cost 11–18 µs a
 * page, and under writes a page in five was a new array.
 */
const digests = new WeakMap<StoredRecord[], string>();
export function rowsDigest(rows: StoredRecord[]): string {
  let digest = digests.get(rows);
  if (digest === undefined) {
    const parts = new Float64Array(rows.length);
    for (let i = 0; i < rows.length; i++) parts[i] = rowHash(rows[i]!);
    digests.set(rows, (digest = Bun.hash(parts).toString(36)));
  }
  return digest;
}

const rowHashes = new WeakMap<StoredRecord, number>();
/** 53 bits of a hash of the row's data, seeded with its uuid and `_modified` (the data is not copied). */
function rowHash(r: StoredRecord): number {
  let h = rowHashes.get(r);
  if (h === undefined) {
    h = Number(BigInt.asUintN(53, BigInt(Bun.hash(r.data, Bun.hash(`${r.uuid}\u0000${r._modified}`)))));
    rowHashes.set(r, h);
  }
  return h;
}

/** A tag's opaque part: what the weak comparison compares. */
const bare = (t: string) => t.trim().replace(/^W\//, "");

/** If-None-Match (weak comparison, `*` included) holds the tag. */
export function etagMatches(request: Request, etag: string): boolean {
  const inm = request.headers.get("if-none-match");
  if (!inm) return false;
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

/** The three forms of an HTTP date (RFC 9110 5.6.7); asctime's has no zone but means GMT. */
const HTTP_DATE = /^(?:[A-Za-z]{3}, \d\d [A-Za-z]{3} \d{4} \d\d:\d\d:\d\d GMT|[A-Za-z]{6,9}, \d\d-[A-Za-z]{3}-\d\d \d\d:\d\d:\d\d GMT|[A-Za-z]{3} [A-Za-z]{3} [ \d]\d \d\d:\d\d:\d\d \d{4})$/;

/** Milliseconds of an HTTP date; NaN for anything else (Date.parse alone reads "1" as the year 2001). */
function httpDate(value: string): number {
  const v = value.trim();
  if (!HTTP_DATE.test(v)) return NaN;
  return Date.parse(v.endsWith("GMT") ? v : `${v} GMT`);
}

/**
 * A write's preconditions (RFC 9110 13.1.1, 13.1.4) as a test of the record the write's transaction
 * read: `etag` gives its tag (worked out only when compared), `modified` its `_modified` in seconds.
 * Undefined when the request sends none.
 *
 * If-Match decides when sent (RFC 9110 13.2.2); `*` holds for any record. RFC 9110 compares
 * If-Match strongly, but resd's tags are weak (their answers' envelopes carry timing fields), and no
 * weak tag ever matches strongly: the opaque parts are compared, `W/` ignored. That is safe for a
 * write because a record's tag changes whenever its stored row does, which is what a strong tag promises.
 * Else If-Unmodified-Since holds while `_modified` is not after the date; a value that is not an
 * HTTP date is ignored, as RFC 9110 asks. An empty If-Match counts as absent.
 */
export function writePrecondition(request: Request): ((etag: () => string, modified: number) => boolean) | undefined {
  const im = request.headers.get("if-match")?.trim();
  if (im) {
    const tags = im.split(",").map(bare);
    if (tags.includes("*")) return () => true;
    return (etag) => tags.includes(bare(etag()));
  }
  const ius = httpDate(request.headers.get("if-unmodified-since") ?? "");
  if (!Number.isFinite(ius)) return undefined;
  const since = Math.floor(ius / 1000);
  return (_, modified) => Math.floor(modified) <= since;
}

/**
 * Where a page's route file lives: URL path `/a/b` ↔ DIR/ext/uri/a/b/index.tpl, its id (md5 hex
 * of the URL path), and the checks that keep a written path inside DIR/ext/uri. Pure but for the
 * file system reads of the symlink check.
 */
import { lstatSync, realpathSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { badRequest } from "../errors";

export const ROUTE_FILE = "index.tpl";
export const MAX_URL_BYTES = 512;
/** Most file systems hold at most 255 bytes in one name. */
const MAX_SEGMENT_BYTES = 255;
/** Letters and digits of any script, and the URL path characters that need no escaping (RFC 3986 pchar, minus ":" and "%"). */
const SEGMENT = /^[\p{L}\p{M}\p{N}._~!$&'()*+,;=@-]+$/u;

export const routesRoot = (dir: string) => join(dir, "ext", "uri");

/** The id of a page: md5 hex of its URL path, as the listing gives it. */
export const pageId = (url: string) => Bun.MD5.hash(url, "hex") as string;

export const isPageId = (id: string) => /^[0-9a-f]{32}$/.test(id);

const bytes = (s: string) => Buffer.byteLength(s, "utf8");

/**
 * A URL path given for a new route file, checked and normalised (one trailing "/" dropped), or a
 * 400 naming the problem. Every refusal happens before anything is written.
 */
export function checkUrl(input: unknown): string {
  if (typeof input !== "string" || input === "") throw badRequest("url must be a URL path such as /contact");
  if (bytes(input) > MAX_URL_BYTES) throw badRequest(`url is ${bytes(input)} bytes long; at most ${MAX_URL_BYTES} are allowed`);
  if (/[\u0000-\u001f\u007f-\u009f]/.test(input)) throw badRequest("url must not contain NUL or other control characters");
  if (input.includes("\\")) throw badRequest("url must not contain a backslash (\\); separate segments with /");
  if (input.includes("%")) throw badRequest("url must not contain percent-encoded characters (%2e, %2f…); write the characters themselves");
  if (/^[a-z][a-z0-9+.-]*:/i.test(input)) throw badRequest("url must be a path on this site (/contact), not an absolute URL or a drive path");
  if (!input.startsWith("/")) throw badRequest("url must start with /");
  if (input.startsWith("//")) throw badRequest("url must be a path on this site, not an absolute path or a URL with a host (//…)");
  if (/[?#]/.test(input)) throw badRequest("url must be a path without ? or #");
  const url = input.length > 1 && input.endsWith("/") ? input.slice(0, -1) : input;
  if (url === "/") return url;
  for (const seg of url.slice(1).split("/")) {
    if (seg === "") throw badRequest("url must not contain empty segments (//)");
    if (seg === "." || seg === "..") throw badRequest("url must not contain . or .. segments");
    if (seg.toLowerCase() === ROUTE_FILE) throw badRequest(`url must not contain a segment named ${ROUTE_FILE}: that name is the route file's own (its folder would hold no page)`);
    if (bytes(seg) > MAX_SEGMENT_BYTES) throw badRequest(`url segment "${seg.slice(0, 20)}…" is longer than ${MAX_SEGMENT_BYTES} bytes`);
    if (!SEGMENT.test(seg)) throw badRequest(`url segment "${seg}" may hold only letters, digits and - . _ ~ ! $ & ' ( ) * + , ; = @`);
  }
  return url;
}

/** The folder of a URL's route file, relative to the routes root ("" for "/"). */
export const folderOf = (url: string) => (url === "/" ? "" : url.slice(1));

/** The route file of a URL path (which must have passed checkUrl). */
export const routeFile = (dir: string, url: string) => join(routesRoot(dir), folderOf(url), ROUTE_FILE);

/** The URL path of a folder below the routes root ("" → "/"). */
export const urlOfFolder = (folder: string) => `/${folder.split(sep).join("/")}`;

/** The real path of `path`: of its deepest existing ancestor, with the rest appended. */
function realOf(path: string): string {
  let head = path;
  const rest: string[] = [];
  for (;;) {
    try {
      return join(realpathSync(head), ...rest.reverse());
    } catch {
      const up = dirname(head);
      if (up === head) return path;
      rest.push(head.slice(up.length).replace(/^[\\/]+/, ""));
      head = up;
    }
  }
}

const inside = (root: string, path: string) => {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith("..") && !rel.startsWith(sep) && rel !== ".." && !/^[a-zA-Z]:/.test(rel));
};

/**
 * Throws 400 when the route file of `url` would be written or read outside DIR/ext/uri: a folder on
 * its way that is a symbolic link leading out, or a route file that is itself a symbolic link.
 */
export function checkInside(dir: string, url: string): void {
  const root = realOf(routesRoot(dir));
  const file = routeFile(dir, url);
  if (!inside(root, realOf(dirname(file)))) throw badRequest(`url ${url} would land outside DIR/ext/uri through a symbolic link`);
  let link = false;
  try {
    link = lstatSync(file).isSymbolicLink();
  } catch {
    // not there yet
  }
  if (link) {
    const target = realOf(file);
    throw badRequest(inside(root, target) ? `the route file of ${url} is a symbolic link; edit the file it points to` : `url ${url} would land outside DIR/ext/uri through a symbolic link`);
  }
}

/** Is the real path of `path` inside the routes root? (Reads never follow a link out.) */
export function realInside(dir: string, path: string): boolean {
  return inside(realOf(routesRoot(dir)), realOf(path));
}

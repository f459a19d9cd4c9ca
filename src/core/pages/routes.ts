/**
 * Route files under DIR/ext/uri: found by a walk of the folder (links followed only while they stay
 * inside it), each with the allow tags it holds (the parser of access/anonymous.ts), and the check
 * that refuses a text whose allow tags would silently do nothing.
 */
import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { ALLOW_OPS, allowTagsOf } from "../access/anonymous";
import { AppError } from "../errors";
import type { Site } from "../site";
import { MAX_URL_BYTES, realInside, ROUTE_FILE, routesRoot, urlOfFolder } from "./paths";

export type Allow = { operation: string; resource: string };
export type RouteFile = { url: string; file: string; allows: Allow[]; size: number; modified: number };

export const MAX_TEXT_BYTES = 64 * 1024;
/** Deeper folders are not walked: as deep as the longest URL checkUrl takes (512 bytes: at most 256 segments). */
const MAX_DEPTH = Math.ceil(MAX_URL_BYTES / 2);
/** Anything that looks like an allow tag, well-formed or not. */
const CANDIDATE = /\[#\s*api-allow\b[\s\S]*?#\]/g;

export const allowsOf = (text: string): Allow[] => allowTagsOf(text).map(({ operation, resource }) => ({ operation, resource }));

/** Every route file below DIR/ext/uri, in no particular order. */
export function scanRoutes(dir: string): RouteFile[] {
  const root = routesRoot(dir);
  const out: RouteFile[] = [];
  if (!existsSync(root)) return out;
  const seen = new Set<string>();
  const walk = (folder: string, depth: number) => {
    let real: string;
    try {
      real = realpathSync(folder);
    } catch {
      return;
    }
    // A link back up would loop; a link out is not the site's.
    if (seen.has(real) || !realInside(dir, real)) return;
    seen.add(real);
    let entries;
    try {
      entries = readdirSync(folder, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const path = join(folder, e.name);
      if (e.name === ROUTE_FILE) {
        const found = readRoute(dir, urlOfFolder(relative(root, folder)));
        if (found) out.push(found.route);
      } else if (depth < MAX_DEPTH && (e.isDirectory() || (e.isSymbolicLink() && isDir(path)))) walk(path, depth + 1);
    }
  };
  walk(root, 0);
  return out;
}

const isDir = (path: string) => {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
};

/** One route file with its text, or null when there is none (or it leads out of DIR/ext/uri). */
export function readRoute(dir: string, url: string): { route: RouteFile; text: string } | null {
  const file = join(routesRoot(dir), url === "/" ? "" : url.slice(1), ROUTE_FILE);
  try {
    const st = statSync(file);
    if (!st.isFile() || !realInside(dir, file)) return null;
    const text = readFileSync(file, "utf8");
    return { route: { url, file: relative(dir, file).split("\\").join("/"), allows: allowsOf(text), size: st.size, modified: Math.floor(st.mtimeMs / 1000) }, text };
  } catch {
    return null;
  }
}

/**
 * Refuses (422, naming the tag) a text that is too large, holds NUL, or has an allow tag that would
 * do nothing: malformed, an unknown operation, a resource the site does not have, or a tag in a
 * file other than DIR/ext/uri/api/v1/<that resource>/index.tpl (the only files resd reads allows from).
 */
export function checkText(site: Site, url: string, text: unknown): string {
  const bad = (why: string) => new AppError(422, "INVALID_DATA", why, { errors: { text: why } });
  if (typeof text !== "string") throw bad("text must be a string");
  const size = Buffer.byteLength(text, "utf8");
  if (size > MAX_TEXT_BYTES) throw bad(`text is ${size} bytes; a route file holds at most ${MAX_TEXT_BYTES} bytes (64 KiB)`);
  if (text.includes("\u0000")) throw bad("text must not contain the NUL character (U+0000)");
  const folder = /^\/api\/v1\/([^/]+)$/.exec(url)?.[1] ?? null;
  for (const m of text.matchAll(CANDIDATE)) {
    const tag = m[0];
    const parsed = allowTagsOf(tag);
    if (parsed.length !== 1 || parsed[0].tag !== tag) throw bad(`${tag} is not an allow tag: write [#api-allow <operation> <resource>#]`);
    const { operation, resource } = parsed[0];
    if (!(operation in ALLOW_OPS)) throw bad(`${tag}: unknown operation "${operation}" (operations: ${Object.keys(ALLOW_OPS).join(", ")})`);
    if (resource.startsWith(".") || site.defs.get(resource)?.internal) throw bad(`${tag}: "${resource}" is internal; allow tags open only the site's resources served at /api/v1/<resource>, never a dot resource`);
    if (!site.defs.has(resource)) throw bad(`${tag}: the site has no resource "${resource}"`);
    if (folder !== resource) throw bad(`${tag}: allow tags take effect only in the route file of /api/v1/${resource}; here it would do nothing`);
  }
  return text;
}

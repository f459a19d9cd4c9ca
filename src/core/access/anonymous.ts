/**
 * What anonymous visitors may do: by default nothing. A route file
 * DIR/ext/uri/api/v1/<resource>/index.tpl with tags `[#api-allow <op> <resource>#]` opens exactly
 * that operation on that resource: get → view (list and read), post → create, put → edit (PUT and
 * PATCH of one record or the collection), delete → delete one record (never "delete all").
 * A tag naming a resource other than its folder is ignored, so one file cannot open another route;
 * a tag naming a dot resource (`.pages`, `.files`…: internal) is ignored too.
 * The files are re-read at most every few seconds, so edits apply without a restart.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Site } from "../site";
import type { Principal } from "./permissions";

export const ALLOW_OPS = { get: "view", post: "create", put: "edit", delete: "delete" } as const;
export type AllowOp = keyof typeof ALLOW_OPS;

const RESCAN_MS = 3000;
const TAG = /\[#\s*api-allow\s+([A-Za-z]+)\s+([.A-Za-z0-9_-]+)\s*#\]/g;

/** The allow tags of a template as written: operation (lower case), resource and the tag itself. Pure. */
export function allowTagsOf(text: string): { operation: string; resource: string; tag: string }[] {
  return [...text.matchAll(TAG)].map((m) => ({ operation: m[1].toLowerCase(), resource: m[2], tag: m[0] }));
}

/** The canonical permissions granted by one template's allow tags. Pure, for tests. */
export function permissionsFromTemplate(folder: string, text: string): { granted: string[]; ignored: string[] } {
  const granted: string[] = [];
  const ignored: string[] = [];
  for (const { operation, resource, tag } of allowTagsOf(text)) {
    const op = operation as AllowOp;
    // A dot resource (.pages, .files, .files_meta…) is internal: no tag opens it, whatever a definition is called.
    if (!(op in ALLOW_OPS) || resource !== folder || resource.startsWith(".")) ignored.push(tag);
    else granted.push(`${ALLOW_OPS[op]}-${resource}`);
  }
  return { granted, ignored };
}

export function scanAllows(dir: string): { permissions: Set<string>; warnings: string[] } {
  const root = join(dir, "ext", "uri", "api", "v1");
  const permissions = new Set<string>();
  const warnings: string[] = [];
  if (!existsSync(root)) return { permissions, warnings };
  for (const entry of readdirSync(root, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const file = join(root, entry.name, "index.tpl");
    if (!existsSync(file)) continue;
    const { granted, ignored } = permissionsFromTemplate(entry.name, readFileSync(file, "utf8"));
    granted.forEach((g) => permissions.add(g));
    for (const tag of ignored) warnings.push(`${file}: ignored ${tag} (operations: get, post, put, delete; the resource must be the folder's name, and not an internal dot resource)`);
  }
  return { permissions, warnings };
}

type Cached = { at: number; principal: Principal; warned: string };
const caches = new WeakMap<Site, Cached>();

/** A route file was written through the API (src/core/pages): the next request reads the allows anew. */
export function forgetAllows(site: Site): void {
  const hit = caches.get(site);
  if (hit) hit.at = -Infinity;
}

export function anonymousPrincipal(site: Site): Principal {
  const now = Date.now();
  const hit = caches.get(site);
  if (hit && now - hit.at < RESCAN_MS) return hit.principal;
  const { permissions, warnings } = scanAllows(site.config.dir);
  const warned = warnings.join("\n");
  if (warned && warned !== hit?.warned) console.error(warned);
  const same = hit && [...permissions].sort().join() === [...hit.principal.permissions].sort().join();
  const principal: Principal = same ? hit.principal : { kind: "anonymous", uuid: null, email: null, role: null, permissions, resources: site.defs };
  caches.set(site, { at: now, principal, warned });
  return principal;
}

/**
 * Where media-library files are used: `.files-usage` (the records whose image, file, upload or
 * gallery fields, or html, name a file) and `.files-unused` (files no record names). A value names
 * a file by its MD5, also inside groups and in html (`/img/{md5}/…`, `/download/{md5}`).
 */
import { authorize, can, type Principal } from "../access/permissions";
import type { FieldDef, ResourceDef } from "../definitions/types";
import { notFound } from "../errors";
import type { Site } from "../site";
import { FILES, MD5_RE, META } from "./context";

export type Usage = { resource: string; uuid: string; fields: string[] };

const MEDIA_TYPES = new Set(["image", "file", "upload", "gallery"]);
const HEX32 = /[0-9a-f]{32}/g;

/** The MD5s one value of a field names (recursing into groups and translations). */
function namedIn(f: FieldDef, v: unknown, out: Set<string>): void {
  if (v === null || v === undefined) return;
  if (Array.isArray(v)) return v.forEach((x) => namedIn(f, x, out));
  if (f.type === "group" && typeof v === "object") {
    for (const [k, sub] of Object.entries(f.fields ?? {})) namedIn(sub, (v as Record<string, unknown>)[k], out);
    return;
  }
  if (typeof v === "object") return Object.values(v).forEach((x) => namedIn(f, x, out));
  if (typeof v !== "string") return;
  if (MEDIA_TYPES.has(f.type) && MD5_RE.test(v)) out.add(v);
  else if (f.type === "html") for (const m of v.matchAll(/\/(?:img|download)\/([0-9a-f]{32})\b/g)) out.add(m[1]);
}

function fieldsNaming(def: ResourceDef, data: Record<string, unknown>, md5: string): string[] {
  return Object.entries(def.fields).filter(([name, f]) => {
    const s = new Set<string>();
    namedIn(f, data[name], s);
    return s.has(md5);
  }).map(([name]) => name);
}

const contentResources = (site: Site) => [...site.defs.values()].filter((d) => !d.internal && d.name !== META);

/** Records naming the file, in the resources the caller may view. */
export async function fileUsage(site: Site, p: Principal, md5: string): Promise<Usage[]> {
  authorize(p, FILES, "view");
  if (!MD5_RE.test(md5) || !(await site.store.get(META, md5))) throw notFound(`file ${md5} does not exist`);
  const out: Usage[] = [];
  for (const def of contentResources(site)) {
    if (!can(p, def.name, "view")) continue;
    // The text search narrows the scan; the fields decide.
    const q = { where: `WHERE ${site.store.dialect.recordText()} LIKE ?`, args: [`%${md5}%`], orderBy: "ORDER BY id", limit: null, offset: 0 };
    for await (const row of site.store.stream(def.name, q)) {
      const fields = fieldsNaming(def, JSON.parse(row.data) as Record<string, unknown>, md5);
      if (fields.length) out.push({ resource: def.name, uuid: row.uuid, fields });
    }
  }
  return out;
}

/**
 * Files no record names. Every resource is read whatever the caller may view, so that a file used
 * where the caller cannot look is never offered as unused; any 32-hex text counts as a use.
 */
export async function unusedFiles(site: Site, p: Principal): Promise<string[]> {
  authorize(p, FILES, "view");
  const unused = new Set<string>();
  const all = { where: "", args: [], orderBy: "ORDER BY id", limit: null, offset: 0 };
  for await (const row of site.store.stream(META, all)) unused.add(row.uuid);
  for (const def of contentResources(site)) {
    if (!unused.size) break;
    for await (const row of site.store.stream(def.name, all)) for (const m of row.data.matchAll(HEX32)) unused.delete(m[0]);
  }
  return [...unused];
}

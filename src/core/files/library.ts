/**
 * The media library's metadata operations behind /api/v1/.files: list, read, update (title, alt
 * text and name only) and delete (record, content and every resized copy). Records live in
 * `.files_meta` and are listed with the same query language as any resource.
 */
import { authorize, type Principal } from "../access/permissions";
import type { ResourceDef } from "../definitions/types";
import { AppError, notFound } from "../errors";
import type { ListParams } from "../query/parse";
import { prepareValues } from "../records/prepare";
import { asObject } from "../validation/object";
import { actor, queryList, writers, type ListResult } from "../records/service";
import type { Site } from "../site";
import type { StoredRecord } from "../store/types";
import { contentKey, FILES, filesOf, MD5_RE, META, variantPrefix } from "./context";
import { cleanFileName } from "./names";

/** Fields a client may change with PUT; the rest describe the content and are set on upload. */
export const EDITABLE = ["title", "alt", "name"];

/**
 * Longest alt text, in characters. Alt text is read aloud in full wherever the image appears; past
 * this it is a description that belongs in the text. The field's own rules (one line, valid
 * Unicode, no NUL) apply as to titles.
 */
export const MAX_ALT = 1000;

/** Throws 422 naming `alt` when it is longer than MAX_ALT characters. */
export function checkAltLength(alt: unknown): void {
  if (typeof alt === "string" && [...alt].length > MAX_ALT) {
    throw new AppError(422, "INVALID_DATA", "one or more fields are invalid", { errors: { alt: `must be at most ${MAX_ALT} characters` } });
  }
}

export function metaDef(site: Site): ResourceDef {
  const def = site.defs.get(META);
  if (!def) throw new AppError(500, "INTERNAL_ERROR", `the built-in resource ${META} is missing`);
  return def;
}

export async function listFiles(site: Site, p: Principal, params: ListParams): Promise<ListResult> {
  authorize(p, FILES, "view");
  return queryList(site, metaDef(site), params);
}

/** The metadata of one file, or 404. No permission check: callers decide (see media routes). */
export async function findFile(site: Site, uuid: string): Promise<StoredRecord> {
  const row = MD5_RE.test(uuid) ? await site.store.get(META, uuid) : null;
  if (!row) throw notFound(`file ${uuid} does not exist`);
  return row;
}

export async function readFile(site: Site, p: Principal, uuid: string): Promise<StoredRecord> {
  authorize(p, FILES, "view", uuid);
  return findFile(site, uuid);
}

export async function updateFile(site: Site, p: Principal, uuid: string, body: unknown): Promise<StoredRecord> {
  authorize(p, FILES, "edit", uuid);
  const def = metaDef(site);
  const input = asObject(body);
  const errors: Record<string, string> = {};
  for (const k of Object.keys(input)) {
    if (k === "uuid" ? input.uuid !== uuid : !EDITABLE.includes(k)) errors[k] = `cannot be changed; editable: ${EDITABLE.join(", ")}`;
  }
  if (Object.keys(errors).length) throw new AppError(422, "INVALID_DATA", `only ${EDITABLE.join(", ")} can be changed`, { errors });
  checkAltLength(input.alt);
  if (typeof input.name === "string") input.name = cleanFileName(input.name);
  await findFile(site, uuid);
  const values = await prepareValues(site.store, def, input, "update", uuid, { passwordMinLength: site.config.passwordMinLength });
  return site.store.transaction(async (tx) => {
    const current = await tx.get(META, uuid);
    if (!current) throw notFound(`file ${uuid} does not exist`);
    return writers.updatePrepared(site, tx, def, current, values, actor(p, "edit"));
  });
}

/**
 * Removes the record first (it is what makes a file exist), then the content and the cache.
 * A failure after the record is gone leaves only unreachable bytes, never a broken record.
 */
export async function deleteFile(site: Site, p: Principal, uuid: string): Promise<StoredRecord> {
  authorize(p, FILES, "delete", uuid);
  const def = metaDef(site);
  const files = filesOf(site);
  if (!MD5_RE.test(uuid)) throw notFound(`file ${uuid} does not exist`);
  return files.lock(uuid, async () => {
    const row = await site.store.transaction(async (tx) => {
      const existing = await tx.get(META, uuid);
      if (!existing) throw notFound(`file ${uuid} does not exist`);
      await writers.deletePrepared(site, tx, def, existing, actor(p, "delete"));
      return existing;
    });
    await files.blobs.deletePrefix(variantPrefix(uuid));
    await files.blobs.delete(contentKey(uuid));
    return row;
  });
}

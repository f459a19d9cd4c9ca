/**
 * Temporary files a crash can leave behind: upload spools (DIR/data/tmp), half-written blobs
 * (DIR/data/files/.tmp) and import spools (DIR/data/import-*.spool). Removed when the server
 * starts; only files older than `minAgeMs`, since a CLI import may be running next to the server.
 */
import { readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { isImportSpool } from "./transfer/spool";

/** Where HTTP uploads are spooled before a reader takes them (src/http/upload-body.ts). */
export const uploadSpoolDir = (dir: string) => join(dir, "data", "tmp");

export function removeLeftovers(dir: string, minAgeMs = 3600_000): string[] {
  const data = join(dir, "data");
  const candidates = [
    ...list(uploadSpoolDir(dir)).map((f) => join(uploadSpoolDir(dir), f)),
    ...list(join(data, "files", ".tmp")).map((f) => join(data, "files", ".tmp", f)),
    ...list(data).filter(isImportSpool).map((f) => join(data, f)),
  ];
  const cutoff = Date.now() - minAgeMs;
  const removed: string[] = [];
  for (const path of candidates) {
    try {
      if (statSync(path).mtimeMs > cutoff) continue;
      rmSync(path, { recursive: true, force: true });
      removed.push(path);
    } catch {
      // gone meanwhile: nothing to remove
    }
  }
  return removed;
}

function list(folder: string): string[] {
  try {
    return readdirSync(folder);
  } catch {
    return [];
  }
}

/**
 * The specifier that starts a worker module, from source and inside the executable.
 *
 * From source, the module is a file under the project root. In the executable, build.ts embeds each
 * worker entry at its path relative to the common root of the entry points (the project root, as
 * the main entry is cli/main.ts), and Bun resolves a relative specifier against that embedded tree.
 * A caller's `new URL("./x.ts", import.meta.url)` does not work there: bundled into the executable,
 * every module's import.meta.url is the executable's own.
 */
import { embedded } from "./version.ts";

/** The import's reading thread (src/core/transfer/reader.ts starts it). */
export const READ_WORKER = "src/core/transfer/read-worker.ts";
/** Every worker module: build.ts embeds each as an entry point. */
export const WORKER_MODULES = [READ_WORKER];

const PROJECT_ROOT = new URL("../../", import.meta.url);

/** `path` is relative to the project root, e.g. "src/core/transfer/read-worker.ts". */
export function workerSpecifier(path: string): string {
  return embedded ? `./${path}` : new URL(path, PROJECT_ROOT).href;
}

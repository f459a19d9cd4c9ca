/** What every command shares: opening the site named by --dir, and failing the same way. */
import { loadConfig, type Config, type SettingName } from "../src/core/config";
import { openSite } from "../src/core/open-site";
import type { Site } from "../src/core/site";
import { AppError } from "../src/core/errors";
import { DefinitionError } from "../src/core/definitions/load";

export type DirOpts = { dir?: string };

export function config(opts: DirOpts, flags: Partial<Record<SettingName, string | number | boolean>> = {}): Config {
  return loadConfig({ dir: opts.dir, flags });
}

export async function withSite<T>(opts: DirOpts, fn: (site: Site) => Promise<T>, flags: Partial<Record<SettingName, string>> = {}, open: { rollback?: boolean } = {}): Promise<T> {
  // A command has no other requests to keep answering: its reads run on its own thread, which
  // spares handing every row of an export to a worker and back.
  const site = await openSite({ ...config(opts, flags), readWorkers: 0 }, open);
  try {
    return await fn(site);
  } finally {
    await site.close();
  }
}

/** The reader of our output went away (`resd export R | head`): that is how a pipe ends, not an error. */
export const isClosedPipe = (e: unknown) => (e as NodeJS.ErrnoException | null)?.code === "EPIPE";

/** Prints an error as one line on stderr and exits non-zero. */
export function fail(e: unknown): never {
  if (isClosedPipe(e)) process.exit(0);
  if (e instanceof AppError) {
    const fields = e.extra.errors ? ` (${Object.entries(e.extra.errors).map(([k, v]) => `${k}: ${v}`).join("; ")})` : "";
    console.error(`resd: ${e.details ?? e.code}${fields}`);
  } else if (e instanceof DefinitionError) {
    console.error(`resd: invalid definition: ${e.message}`);
  } else {
    console.error(`resd: ${(e as Error)?.message ?? String(e)}`);
  }
  process.exit(e instanceof AppError && e.status < 500 ? 2 : 1);
}

/** Wraps a command action so that any error is printed once and sets the exit code. */
export const action = <A extends unknown[]>(fn: (...args: A) => Promise<void> | void) => async (...args: A) => {
  try {
    await fn(...args);
  } catch (e) {
    fail(e);
  }
};

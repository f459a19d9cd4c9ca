/** What every command shares: opening the site named by --dir, and failing the same way. */
import { loadConfig, type Config, type SettingName } from "../src/core/config";
import { openSite } from "../src/core/open-site";
import type { Site } from "../src/core/site";
import { AppError, badRequest } from "../src/core/errors";
import { DefinitionError } from "../src/core/definitions/load";
import { statSync, type Stats } from "node:fs";
import { dirname, resolve } from "node:path";
import type { Command } from "commander";

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

/**
 * Hands the options given before the subcommand (`resd --dir X --json user list`) to the command
 * that runs, unless it was given its own after it. A command that does not take one is a usage error.
 */
export function globalOptions(command: Command) {
  // Nearest first: `resd --dir A user --dir B list` is B.
  for (let above = command.parent; above; above = above.parent) {
    for (const [key, value] of Object.entries(above.opts())) {
      if (value === undefined) continue;
      const flag = `--${key}`;
      if (!command.options.some((o) => o.long === flag)) command.error(`error: '${commandPath(command)}' does not take ${flag}`, { exitCode: 2, code: "resd.globalOption" });
      if (command.getOptionValueSource(key) === undefined) command.setOptionValueWithSource(key, value, "cli");
    }
  }
}

const commandPath = (c: Command): string => (c.parent?.parent ? `${commandPath(c.parent)} ${c.name()}` : c.name());

/**
 * A file to write (`--out`) whose folder does not exist, or that is a folder: refused before any
 * work, in a sentence (exit 2). What only writing finds out (a full disk, /proc) stays a failure.
 */
export function checkOutFile(out: string) {
  const folder = dirname(resolve(out));
  let st: Stats | undefined;
  try {
    st = statSync(folder);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw badRequest(`--out ${out}: the folder ${folder} does not exist`);
    if (code === "ENOTDIR") throw badRequest(`--out ${out}: ${nearestFile(folder)} is not a folder`);
    throw e;
  }
  if (!st.isDirectory()) throw badRequest(`--out ${out}: ${folder} is not a folder`);
  if (statSync(resolve(out), { throwIfNoEntry: false })?.isDirectory()) throw badRequest(`--out ${out}: is a folder; name a file in it`);
}

/** The first path above `path` that exists (the file that a path runs through as if it were a folder). */
function nearestFile(path: string): string {
  for (let p = path; p !== dirname(p); p = dirname(p)) if (statSync(p, { throwIfNoEntry: false })) return p;
  return path;
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

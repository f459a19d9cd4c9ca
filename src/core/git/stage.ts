/**
 * What a pull would make the site serve, worked out before the working tree moves: today's
 * `resources/` with the pull's changes applied, written to a temporary folder and loaded exactly as
 * `resd serve` loads definitions at start (`loadDefinitions`); and a syntax check of the extension
 * code it changes. Anything wrong is a 422 naming the file (as the site folder names it) and the field.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { AppError } from "../errors";
import { DefinitionError, loadDefinitions } from "../definitions/load";
import type { ResourceDef } from "../definitions/types";
import type { Checkout } from "./repo";
import { gitOut } from "./run";

/** One path a pull changes: git's status letter (A, M, D, T) and the path from the checkout's top. */
export type Change = { status: string; path: string };

/** The site folder's own name for a path of the checkout ("resources/x.json"); null when outside it. */
export const inSite = (c: Checkout, path: string): string | null => (path.startsWith(c.prefix) ? path.slice(c.prefix.length) : null);

/** A definition file of the site: resources/<name>.json (loadDefinitions reads no subfolder). */
export const isDefinition = (rel: string | null): rel is string => rel !== null && /^resources\/[^/]+\.json$/.test(rel);

/** Extension code: ext/*.ts and ext/*.js and what they import from ext/; route files (ext/uri/) are not code. */
export const isExtensionCode = (rel: string | null): rel is string =>
  rel !== null && rel.startsWith("ext/") && !rel.startsWith("ext/uri/") && /\.(ts|js|mjs|cjs|tsx|jsx)$/.test(rel);

/** The 422 of an invalid file: `details` says it whole; `file`, `field` and `errors` name the parts. */
export function invalidFile(file: string, field: string | null, reason: string, stays: string): AppError {
  return new AppError(422, "INVALID_DATA", `${file}${field ? `: field "${field}"` : ""}: ${reason}. Nothing was pulled: the site stays at ${stays.slice(0, 12)}`, {
    errors: { [field ?? "(file)"]: reason }, file, field, refusal: "invalid",
  });
}

/**
 * The definitions after the pull, loaded from a temporary copy; each definition's `file` is where
 * the file will be in the site folder. Throws the 422 of the first invalid file.
 */
export async function definitionsAfter(c: Checkout, to: string, changes: Change[], stays: string): Promise<Map<string, ResourceDef>> {
  const tmp = mkdtempSync(join(tmpdir(), "resd-pull-"));
  const folder = join(tmp, "resources");
  mkdirSync(folder);
  try {
    const here = join(c.dir, "resources");
    // What stays as it is: the files the pull leaves alone, local (even uncommitted) ones included.
    if (existsSync(here)) {
      for (const f of readdirSync(here)) {
        if (f.endsWith(".json") && statSync(join(here, f)).isFile()) writeFileSync(join(folder, f), readFileSync(join(here, f)));
      }
    }
    for (const ch of changes) {
      const rel = inSite(c, ch.path);
      if (!isDefinition(rel)) continue;
      const file = join(folder, basename(rel));
      if (ch.status === "D") rmSync(file, { force: true });
      else writeFileSync(file, await gitOut(c.dir, ["cat-file", "blob", `${to}:${ch.path}`], { readOnly: true }));
    }
    let defs: Map<string, ResourceDef>;
    try {
      defs = loadDefinitions(tmp);
    } catch (e) {
      if (!(e instanceof DefinitionError)) throw e;
      const file = e.file.startsWith(folder) ? `resources${e.file.slice(folder.length)}` : e.file;
      const where = `${e.file}${e.field ? `: field "${e.field}"` : ""}: `;
      throw invalidFile(file, e.field, e.message.startsWith(where) ? e.message.slice(where.length) : e.message, stays);
    }
    const out = new Map<string, ResourceDef>();
    for (const [name, def] of defs) out.set(name, def.file ? { ...def, file: join(here, basename(def.file)) } : def);
    return out;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * Extension code is loaded at start only, so a pull never loads it; but code that does not even
 * compile would stop the next start. Each changed file is transpiled (not run) to make sure it does.
 */
export async function checkExtensionCode(c: Checkout, to: string, changes: Change[], stays: string): Promise<string[]> {
  const changed: string[] = [];
  for (const ch of changes) {
    const rel = inSite(c, ch.path);
    if (!isExtensionCode(rel)) continue;
    changed.push(rel);
    if (ch.status === "D") continue;
    const text = await gitOut(c.dir, ["cat-file", "blob", `${to}:${ch.path}`], { readOnly: true });
    const loader = /\.(tsx|jsx)$/.test(rel) ? "tsx" : /\.ts$/.test(rel) ? "ts" : "js";
    try {
      new Bun.Transpiler({ loader }).transformSync(text);
    } catch (e) {
      throw invalidFile(rel, null, `does not compile: ${(e as Error).message ?? String(e)}`, stays);
    }
  }
  return changed;
}

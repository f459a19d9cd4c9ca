/**
 * What a pull would make the site serve, worked out before the working tree moves: the new commit
 * checked out into a temporary folder with the local state the pull leaves alone, its definitions
 * loaded exactly as `resd serve` loads them at start (`loadDefinitions`); and a syntax check of the extension
 * code it changes. Anything wrong is a 422 naming the file (as the site folder names it) and the field.
 */
import { copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, realpathSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, isAbsolute, join, relative, sep } from "node:path";
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
 * The definitions after the pull, loaded as `resd serve` will load them once the working tree has
 * moved: the new commit's whole tree is checked out into a temporary folder (a temporary index and
 * `git checkout-index`, symbolic links as links), the local state of what the pull leaves alone is
 * laid over it (changes to tracked files, and every resources/*.json the pull does not touch, as
 * git keeps them), and `loadDefinitions` reads the site folder there, following links as serve
 * does. A definition the pull brings that reaches outside the site folder through a symbolic link
 * (a linked file, or resources/ itself a link) is refused. Each definition's `file` is where the
 * file will be in the site folder. Throws the 422 of the first invalid file; nothing has moved.
 */
export async function definitionsAfter(c: Checkout, to: string, changes: Change[], stays: string): Promise<Map<string, ResourceDef>> {
  const tmp = realpathSync(mkdtempSync(join(tmpdir(), "resd-pull-")));
  const work = join(tmp, "tree");
  mkdirSync(work);
  try {
    const env = { GIT_INDEX_FILE: join(tmp, "index") };
    await gitOut(c.top, ["read-tree", to], { env });
    await gitOut(c.top, [`--work-tree=${work}`, "checkout-index", "--all", "--force"], { env });
    const site = join(work, c.prefix);
    const changed = new Set(changes.map((ch) => ch.path));
    // Tracked files with local changes the pull does not touch stay as they are (a link's target too).
    const local = (await gitOut(c.top, ["diff", "--no-renames", "--name-only", "-z", "HEAD", "--"], { readOnly: true })).split("\0").filter(Boolean);
    const own = new Set<string>();
    for (const path of local) if (!changed.has(path)) replicate(join(c.top, path), join(work, path));
    // So do the site's own definition files the pull leaves alone (untracked and ignored ones too).
    const here = join(c.dir, "resources");
    const there = join(site, "resources");
    const bringsFolder = changed.has(`${c.prefix}resources`);
    if (!bringsFolder && isRealFolder(here) && isRealFolder(there)) {
      for (const f of new Set([...readdirSync(here), ...readdirSync(there)])) {
        if (!f.endsWith(".json") || changed.has(`${c.prefix}resources/${f}`)) continue;
        replicate(join(here, f), join(there, f));
        own.add(f);
      }
    }
    refuseLinksOut(site, own, stays);
    let defs: Map<string, ResourceDef>;
    try {
      defs = loadDefinitions(site);
    } catch (e) {
      if (!(e instanceof DefinitionError)) throw e;
      const where = `${e.file}${e.field ? `: field "${e.field}"` : ""}: `;
      const reason = e.message.startsWith(where) ? e.message.slice(where.length) : e.message;
      const named = siteName(site, e.file);
      const target = siteName(site, resolved(e.file) ?? e.file);
      const through = target !== named ? ` (reached through the symbolic link ${named})` : "";
      throw invalidFile(target, e.field, reason + through, stays);
    }
    const out = new Map<string, ResourceDef>();
    for (const [name, def] of defs) out.set(name, def.file ? { ...def, file: join(here, basename(def.file)) } : def);
    return out;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** A path of the temporary site folder as the site folder names it. */
function siteName(site: string, path: string): string {
  const rel = relative(site, path);
  return rel.startsWith("..") || isAbsolute(rel) ? path : rel;
}

const resolved = (path: string): string | null => {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
};

const isRealFolder = (path: string) => lstatSync(path, { throwIfNoEntry: false })?.isDirectory() === true;

/** Makes `to` what `from` is: the same file, the same symbolic link, or nothing. */
function replicate(from: string, to: string): void {
  rmSync(to, { force: true, recursive: true });
  const st = lstatSync(from, { throwIfNoEntry: false });
  if (!st) return;
  mkdirSync(dirname(to), { recursive: true });
  if (st.isSymbolicLink()) symlinkSync(readlinkSync(from), to);
  else if (st.isFile()) copyFileSync(from, to);
}

/**
 * resources/ and each resources/*.json of the new commit must resolve inside the site folder: a
 * symbolic link out of it would make the site load (and the pull validate) files nobody committed.
 * `own`: the local definition files the pull leaves alone (the operator's, served already).
 */
function refuseLinksOut(site: string, own: Set<string>, stays: string): void {
  const inside = (path: string) => {
    const real = resolved(path);
    if (real === null) return true; // a missing target: the loader names it
    const rel = relative(site, real);
    return !(rel === ".." || rel.startsWith(`..${sep}`) || isAbsolute(rel));
  };
  const folder = join(site, "resources");
  if (!existsSync(folder)) return;
  if (!inside(folder)) {
    throw invalidFile("resources", null, `is a symbolic link to ${readlinkSync(folder)}, outside the site folder: the site would load definitions from there`, stays);
  }
  for (const f of readdirSync(folder)) {
    if (!f.endsWith(".json") || own.has(f)) continue;
    const path = join(folder, f);
    if (!inside(path)) {
      const link = lstatSync(path).isSymbolicLink() ? readlinkSync(path) : resolved(path);
      throw invalidFile(`resources/${f}`, null, `is a symbolic link to ${link}, outside the site folder: the site would load a definition from there`, stays);
    }
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

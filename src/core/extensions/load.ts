/**
 * Loads `DIR/ext/*.ts` and `DIR/ext/*.js` in name order. Each module's default export is called
 * with the extension API (see api.ts). Any failure — syntax error, missing or wrong export, a
 * throwing or rejecting init — stops start-up with an ExtensionError naming the file; nothing is
 * served until every extension has loaded. `import()` of a file on disk works from source and
 * from the compiled binary alike (Bun transpiles TypeScript at import time in both).
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Site } from "../site";
import { buildApi, type ExtensionApi } from "./api";
import { ExtensionError, registryOf, type Registry } from "./registry";

/** Extension files of a site, absolute paths in name order. Subfolders (e.g. ext/uri/) are not extensions. */
export function extensionFiles(dir: string): string[] {
  const folder = join(dir, "ext");
  if (!existsSync(folder)) return [];
  return readdirSync(folder)
    .filter((n) => /\.(ts|js)$/.test(n) && !n.endsWith(".d.ts") && !n.startsWith("."))
    .sort()
    .map((n) => join(folder, n))
    .filter((p) => statSync(p).isFile());
}

/** Bun's syntax errors (BuildMessage) carry the position apart from the message. */
function describe(e: unknown): string {
  const pos = (e as { position?: { line?: number; column?: number } } | null)?.position;
  const where = pos?.line ? ` (line ${pos.line}, column ${pos.column ?? 0})` : "";
  return `${e instanceof Error || (e && typeof (e as Error).message === "string") ? (e as Error).message : String(e)}${where}`;
}

export async function loadExtensions(site: Site): Promise<Registry> {
  const registry = registryOf(site);
  for (const file of extensionFiles(site.config.dir)) {
    let mod: Record<string, unknown>;
    try {
      mod = (await import(file)) as Record<string, unknown>;
    } catch (e) {
      throw new ExtensionError(file, `cannot load: ${describe(e)}`);
    }
    const init = mod.default;
    if (typeof init !== "function") {
      throw new ExtensionError(file, `must export a default function (api) => void, found ${init === undefined ? "no default export" : typeof init}`);
    }
    try {
      await (init as (api: ExtensionApi) => unknown)(buildApi(site, registry, file));
    } catch (e) {
      if (e instanceof ExtensionError) throw e;
      throw new ExtensionError(file, `failed to start: ${describe(e)}`);
    }
    registry.files.push(file);
  }
  registry.freeze();
  return registry;
}

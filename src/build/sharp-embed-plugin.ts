/**
 * Bun build plugin that makes sharp work inside a `bun build --compile`
 * executable with no node_modules next to it.
 *
 * A plain compile cannot load sharp: its loader (`sharp/dist/sharp.{mjs,cjs}`)
 * requires `@img/sharp-<platform>/sharp.node`, and that binding needs
 * `libvips-cpp.so.*`, which it finds through the RPATH
 * `$ORIGIN/../../sharp-libvips-<platform>/lib` - a file the bundler knows
 * nothing about.
 *
 * During the compile only (this plugin is used by build.ts, never at runtime),
 * the plugin replaces the body of `sharp/dist/sharp.mjs` with a generated
 * module that
 *   - imports the binding (`@img/sharp-<platform>/lib/*.node`) and libvips
 *     (`@img/sharp-libvips-<platform>/lib/libvips-cpp.so*`) with
 *     `with { type: "file" }`, so both are stored inside the executable;
 *   - passes their build-time SHA-256 and relative layout to
 *     `loadEmbeddedNative` (src/build/native-loader.ts), which extracts them
 *     to a per-version cache folder on first use and `process.dlopen`s the
 *     binding;
 *   - keeps sharp's "x64 v2 microarchitecture" check.
 * `sharp/dist/sharp.cjs` is replaced by `module.exports = require(<sharp.mjs>).default`
 * so CommonJS and ESM importers of sharp share the same single binding.
 */
import type { BunPlugin } from "bun";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

/** Bun compile targets we know how to embed sharp for, mapped to sharp's platform names. */
export const SHARP_PLATFORM_BY_TARGET: Record<string, string> = {
  "bun-linux-x64": "linux-x64",
  "bun-linux-x64-baseline": "linux-x64",
  "bun-linux-x64-modern": "linux-x64",
  "bun-linux-arm64": "linux-arm64",
  "bun-linux-x64-musl": "linuxmusl-x64",
  "bun-linux-arm64-musl": "linuxmusl-arm64",
};

export interface SharpNativeFiles {
  /** sharp's platform name, e.g. `linux-x64`. */
  platform: string;
  sharpVersion: string;
  sharpDir: string;
  /** Files to embed, with their layout relative to the cache folder. */
  files: { abs: string; rel: string; sha256: string; size: number }[];
  /** `rel` of the `.node` binding. */
  binding: string;
  /** Cache folder name, e.g. `sharp-0.35.5-linux-x64-1a2b3c4d5e6f`. */
  key: string;
}

function findPackageDir(fromFile: string, name: string): string {
  let dir = dirname(fromFile);
  for (;;) {
    const pj = join(dir, "package.json");
    if (existsSync(pj)) {
      try {
        if (JSON.parse(readFileSync(pj, "utf8")).name === name) return dir;
      } catch {
        // keep walking up
      }
    }
    const up = dirname(dir);
    if (up === dir) throw new Error(`package.json of ${name} not found above ${fromFile}`);
    dir = up;
  }
}

function sha256(path: string): string {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

/**
 * Locate sharp and the native packages for `platform` as installed under
 * `root`. Returns `null` (with the reason) when a package is not installed.
 */
export function findSharpNativeFiles(
  platform: string,
  root: string,
  /** Another folder whose node_modules may hold the platform packages (see fetch-native.ts). */
  nativeRoot?: string,
): { ok: true; value: SharpNativeFiles } | { ok: false; reason: string } {
  let sharpDir: string;
  try {
    sharpDir = findPackageDir(Bun.resolveSync("sharp", root), "sharp");
  } catch (err) {
    return { ok: false, reason: `sharp is not installed (${(err as Error).message})` };
  }
  const sharpVersion: string = JSON.parse(readFileSync(join(sharpDir, "package.json"), "utf8")).version;

  const bindingName = `@img/sharp-${platform}`;
  const libvipsName = `@img/sharp-libvips-${platform}`;
  let bindingDir: string;
  let libvipsDir: string;
  try {
    bindingDir = dirname(Bun.resolveSync(`${bindingName}/package`, sharpDir));
  } catch {
    try {
      if (!nativeRoot) throw new Error("no other root");
      bindingDir = dirname(Bun.resolveSync(`${bindingName}/package`, nativeRoot));
    } catch {
      return { ok: false, reason: `${bindingName} is not installed` };
    }
  }
  try {
    libvipsDir = dirname(Bun.resolveSync(`${libvipsName}/package`, bindingDir));
  } catch {
    return { ok: false, reason: `${libvipsName} is not installed` };
  }

  const nodeFiles = readdirSync(join(bindingDir, "lib")).filter((f) => f.endsWith(".node"));
  if (nodeFiles.length !== 1) {
    return { ok: false, reason: `expected one .node file in ${bindingDir}/lib, found ${nodeFiles.length}` };
  }
  const libFiles = readdirSync(join(libvipsDir, "lib")).filter(
    (f) => /^libvips-cpp\.so(\.|$)/.test(f) && statSync(join(libvipsDir, "lib", f)).isFile(),
  );
  if (libFiles.length === 0) return { ok: false, reason: `no libvips-cpp.so* in ${libvipsDir}/lib` };

  // Same layout as node_modules/@img, so the binding's RPATH
  // ($ORIGIN/../../sharp-libvips-<platform>/lib) resolves libvips.
  const files = [
    ...nodeFiles.map((f) => ({ abs: join(bindingDir, "lib", f), rel: `sharp-${platform}/lib/${f}` })),
    ...libFiles.map((f) => ({ abs: join(libvipsDir, "lib", f), rel: `sharp-libvips-${platform}/lib/${f}` })),
  ].map((f) => ({ ...f, sha256: sha256(f.abs), size: statSync(f.abs).size }));

  const combined = createHash("sha256");
  for (const f of files) combined.update(`${f.rel}\0${f.sha256}\n`);
  const key = `sharp-${sharpVersion}-${platform}-${combined.digest("hex").slice(0, 12)}`;

  return {
    ok: true,
    value: { platform, sharpVersion, sharpDir, files, binding: files[0]!.rel, key },
  };
}

/** Source of the module that replaces `sharp/dist/sharp.mjs` in the bundle. */
function generatedLoaderSource(native: SharpNativeFiles): string {
  const loaderPath = resolve(import.meta.dir, "native-loader.ts");
  const imports = native.files
    .map((f, i) => `import __resd_native_${i} from ${JSON.stringify(f.abs)} with { type: "file" };`)
    .join("\n");
  const files = native.files
    .map(
      (f, i) =>
        `    { embedded: __resd_native_${i}, rel: ${JSON.stringify(f.rel)}, sha256: ${JSON.stringify(f.sha256)}, size: ${f.size} },`,
    )
    .join("\n");
  const x64 = native.platform.endsWith("-x64");
  return `// Generated by src/build/sharp-embed-plugin.ts: sharp ${native.sharpVersion} binding embedded for ${native.platform}.
${imports}
import { loadEmbeddedNative } from ${JSON.stringify(loaderPath)};

const { exports: sharp } = loadEmbeddedNative({
  name: "sharp",
  key: ${JSON.stringify(native.key)},
  platform: ${JSON.stringify(native.platform)},
  binding: ${JSON.stringify(native.binding)},
  files: [
${files}
  ],
});
${
  x64
    ? `if (!sharp._isUsingX64V2()) {
  const err = new Error("Prebuilt binaries for Linux x64 require v2 microarchitecture");
  err.code = "Unsupported CPU";
  throw err;
}
`
    : ""
}
export default sharp;
`;
}

export interface SharpEmbedPluginOptions {
  /** sharp platform name to embed, e.g. `linux-x64` (see {@link SHARP_PLATFORM_BY_TARGET}). */
  platform: string;
  /** Folder whose node_modules hold sharp (the project root). */
  root: string;
  /** A folder whose node_modules hold the platform's packages when the project's do not. */
  nativeRoot?: string;
}

/** The build plugin. Throws at setup time if the native packages for `platform` are missing. */
export function sharpEmbedPlugin(opts: SharpEmbedPluginOptions): BunPlugin {
  const found = findSharpNativeFiles(opts.platform, opts.root, opts.nativeRoot);
  if (!found.ok) throw new Error(`sharp-embed: cannot embed sharp for ${opts.platform}: ${found.reason}`);
  const native = found.value;
  const esmLoader = join(native.sharpDir, "dist", "sharp.mjs");
  const cjsLoader = join(native.sharpDir, "dist", "sharp.cjs");
  let replaced = 0;

  return {
    name: "resd-sharp-embed",
    setup(build) {
      build.onLoad({ filter: /[\\/]sharp[\\/]dist[\\/]sharp\.(mjs|cjs)$/ }, (args) => {
        if (args.path === esmLoader) {
          replaced++;
          return { contents: generatedLoaderSource(native), loader: "js" };
        }
        if (args.path === cjsLoader) {
          replaced++;
          return {
            contents: `// Generated by src/build/sharp-embed-plugin.ts\nmodule.exports = require(${JSON.stringify(esmLoader)}).default;\n`,
            loader: "js",
          };
        }
        // Another copy of sharp (e.g. nested in a dependency): its binding would
        // not be embedded and would fail only at runtime, so fail the build now.
        throw new Error(
          `sharp-embed: found a second copy of sharp at ${args.path}; only ${native.sharpDir} is embedded. ` +
            `Dedupe sharp so every importer uses the same version.`,
        );
      });
      build.onEnd(() => {
        if (replaced === 0) {
          console.warn("sharp-embed: sharp was not part of the bundle; nothing embedded.");
        }
      });
    },
  };
}

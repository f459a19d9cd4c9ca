#!/usr/bin/env bun
/**
 * Build the resd single-file executable.
 *
 *   bun build.ts                          # cli/main.ts -> dist/resd (linux-x64),
 *                                         # plus dist/resd-linux-arm64 if its sharp packages are installed
 *   bun build.ts --entry <file> --outfile <file>   # compile another entry (used by tests); host target only
 *   bun build.ts --target bun-linux-arm64 # only the given target(s) (repeatable)
 *
 * The executable embeds sharp's native binding and libvips (see
 * src/build/sharp-embed-plugin.ts) and extracts them to a cache folder on first
 * use, so it runs with no node_modules around.
 *
 * Build-time constants: RESD_VERSION (package.json version) and RESD_COMMIT
 * (`git rev-parse --short HEAD`, "unknown" outside git) are defined as global
 * string constants. Read them only through src/build/version.ts:
 *   import { version, commit } from "./src/build/version.ts";
 * which falls back to package.json's version and "dev" when running from source.
 */
import { statSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { dirname, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import { findSharpNativeFiles, SHARP_PLATFORM_BY_TARGET, sharpEmbedPlugin } from "./src/build/sharp-embed-plugin.ts";
import { fetchSharpNative } from "./src/build/fetch-native.ts";
import { bundleAdmin, serializeBundle } from "./src/build/admin-bundle.ts";
import { WORKER_MODULES } from "./src/build/worker-url.ts";

const ROOT = import.meta.dir;
/** Modules started with `new Worker(workerSpecifier(…))`, embedded beside the entry. */
const WORKER_ENTRIES = WORKER_MODULES.map((path) => resolve(ROOT, path));
const PRIMARY_TARGET = "bun-linux-x64";
/** Built in addition to the primary target when their sharp packages are installed. */
const EXTRA_TARGETS = ["bun-linux-arm64"];

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    entry: { type: "string", default: "cli/main.ts" },
    outfile: { type: "string" },
    target: { type: "string", multiple: true },
    "no-minify": { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  },
  strict: true,
});

if (values.help) {
  console.log(
    "usage: bun build.ts [--entry cli/main.ts] [--outfile dist/resd] [--target bun-linux-x64 ...] [--no-minify]",
  );
  process.exit(0);
}

const entry = resolve(values.entry!);
const outfile = resolve(values.outfile ?? "dist/resd");
const explicitTargets = values.target && values.target.length > 0;
const targets = explicitTargets
  ? values.target!
  : values.outfile
    ? [PRIMARY_TARGET]
    : [PRIMARY_TARGET, ...EXTRA_TARGETS];

try {
  if (!statSync(entry).isFile()) throw new Error("not a file");
} catch {
  console.error(`build: entry point ${relative(process.cwd(), entry) || entry} does not exist`);
  process.exit(1);
}

async function gitCommit(): Promise<string> {
  try {
    const proc = Bun.spawnSync(["git", "rev-parse", "--short", "HEAD"], { cwd: ROOT, stderr: "ignore" });
    const out = proc.stdout.toString().trim();
    return proc.exitCode === 0 && out ? out : "unknown";
  } catch {
    return "unknown";
  }
}

const pkg = await Bun.file(resolve(ROOT, "package.json")).json();
const version: string = pkg.version;
const commit = await gitCommit();
const adminStarted = performance.now();
const admin = await bundleAdmin();
const adminGz = admin.assets.reduce((n, a) => n + Bun.gzipSync(a.body as Uint8Array<ArrayBuffer>).length, 0);
console.log(`build: admin pages ${admin.assets.map((a) => a.name).join(", ")} (${(adminGz / 1024).toFixed(1)} KiB gzipped) in ${Math.round(performance.now() - adminStarted)} ms`);

function fmtBytes(n: number): string {
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

let failed = false;
for (const [i, target] of targets.entries()) {
  const isFirst = i === 0;
  const platform = SHARP_PLATFORM_BY_TARGET[target];
  const out = isFirst ? outfile : `${outfile}-${platform ?? target.replace(/^bun-/, "")}`;
  if (!platform) {
    console.error(`build: unsupported target ${target} (known: ${Object.keys(SHARP_PLATFORM_BY_TARGET).join(", ")})`);
    failed = true;
    continue;
  }
  let nativeRoot: string | undefined;
  let native = findSharpNativeFiles(platform, ROOT);
  if (!native.ok && !isFirst) {
    // Another platform's packages are skipped by the installer: fetch the versions sharp pins.
    try {
      nativeRoot = fetchSharpNative(platform, dirname(Bun.resolveSync("sharp/package.json", ROOT)), resolve(ROOT, "dist/.native"));
      native = findSharpNativeFiles(platform, ROOT, nativeRoot);
    } catch (err) {
      native = { ok: false, reason: (err as Error).message };
    }
  }
  if (!native.ok) {
    if (explicitTargets || isFirst) {
      console.error(`build: cannot build ${target}: ${native.reason}`);
      failed = true;
    } else {
      console.log(`build: skipping ${target}: ${native.reason}`);
    }
    continue;
  }

  await mkdir(dirname(out), { recursive: true });
  const started = performance.now();
  let result: Awaited<ReturnType<typeof Bun.build>>;
  try {
    result = await Bun.build({
      // Worker entry points must be listed to be embedded; the main entry stays first.
      entrypoints: [entry, ...WORKER_ENTRIES],
      compile: { target: target as Bun.Build.CompileTarget, outfile: out, autoloadDotenv: false },
      minify: !values["no-minify"],
      sourcemap: "linked",
      define: {
        RESD_VERSION: JSON.stringify(version),
        RESD_COMMIT: JSON.stringify(commit),
        RESD_ADMIN_BUNDLE: JSON.stringify(serializeBundle(admin)),
      },
      plugins: [sharpEmbedPlugin({ platform, root: ROOT, nativeRoot })],
      throw: false,
    });
  } catch (err) {
    console.error(`build: ${target} failed:`, err);
    failed = true;
    continue;
  }
  const ms = performance.now() - started;
  if (!result.success) {
    console.error(`build: ${target} failed:`);
    for (const log of result.logs) console.error(log);
    failed = true;
    continue;
  }
  for (const log of result.logs) console.warn(log);
  const size = statSync(out).size;
  console.log(
    `build: ${relative(process.cwd(), out) || out} (${target}, resd ${version} ${commit}, sharp ${native.value.sharpVersion}) ` +
      `${fmtBytes(size)} in ${(ms / 1000).toFixed(2)} s`,
  );
}

process.exit(failed ? 1 : 0);

/**
 * Black-box test of `bun build.ts`: compile a small sharp probe into a single
 * executable, copy it ALONE into an empty folder outside the checkout and run
 * it there, proving sharp's binding and libvips are embedded and extracted to
 * the cache folder (and reused, not rewritten, on the next run).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";

const ROOT = join(import.meta.dir, "..");
const PROBE = "test/fixtures/build-sharp-probe.ts";
const BUILD_TIMEOUT = 120_000;

let work: string;
let binary: string;
let runDir: string;
let home: string;
let cacheHome: string;

type RunResult = { exitCode: number; stdout: string; stderr: string; ms: number };

async function run(cmd: string[], cwd: string, env: Record<string, string>): Promise<RunResult> {
  const started = performance.now();
  const proc = Bun.spawn(cmd, { cwd, env, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { exitCode, stdout, stderr, ms: performance.now() - started };
}

/** Environment for the lone binary: nothing inherited that could point back at the checkout. */
function isolatedEnv(extra: Record<string, string>): Record<string, string> {
  return { PATH: "/usr/bin:/bin", TMPDIR: join(work, "tmp"), ...extra };
}

function expectProbeOutput(r: RunResult): void {
  if (r.exitCode !== 0) throw new Error(`probe failed (${r.exitCode}):\n${r.stderr}\n${r.stdout}`);
  const lines = r.stdout.trim().split("\n");
  expect(JSON.parse(lines[lines.length - 1]!)).toEqual({ format: "webp", width: 100, height: 75 });
}

/** Files under `<base>/resd/<key>/...` with their inode, mtime and hash. */
function snapshotCache(base: string): Record<string, { ino: number; mtimeMs: number; sha256: string }> {
  const out: Record<string, { ino: number; mtimeMs: number; sha256: string }> = {};
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else
        out[relative(base, p)] = {
          ino: st.ino,
          mtimeMs: st.mtimeMs,
          sha256: createHash("sha256").update(readFileSync(p)).digest("hex"),
        };
    }
  };
  if (existsSync(base)) walk(base);
  return out;
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "resd-build-sharp-"));
  mkdirSync(join(work, "tmp"));
  const outfile = join(work, "build", "probe");
  const build = await run([process.execPath, "build.ts", "--entry", PROBE, "--outfile", outfile], ROOT, {
    ...(process.env as Record<string, string>),
  });
  if (build.exitCode !== 0) throw new Error(`bun build.ts failed:\n${build.stderr}\n${build.stdout}`);
  console.log(build.stdout.trim());

  // Copy the binary alone into a fresh, empty folder outside the checkout.
  runDir = join(work, "run");
  mkdirSync(runDir);
  binary = join(runDir, "probe");
  copyFileSync(outfile, binary);
  chmodSync(binary, 0o755);
  home = join(work, "home");
  cacheHome = join(home, ".cache");
  mkdirSync(home);
}, BUILD_TIMEOUT);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("compiled executable with embedded sharp", () => {
  test("no node_modules is reachable from the run folder", () => {
    expect(readdirSync(runDir)).toEqual(["probe"]);
    for (let dir = runDir; ; dir = dirname(dir)) {
      expect(existsSync(join(dir, "node_modules"))).toBe(false);
      if (dirname(dir) === dir) break;
    }
    expect(relative(ROOT, runDir).startsWith("..")).toBe(true);
  });

  test("first run extracts the native files and processes an image", async () => {
    const r = await run([binary], runDir, isolatedEnv({ HOME: home, XDG_CACHE_HOME: cacheHome }));
    expectProbeOutput(r);
    const files = Object.keys(snapshotCache(join(cacheHome, "resd")));
    expect(files.some((f) => /\/sharp-linux-x64\/lib\/sharp-linux-x64-.*\.node$/.test(f))).toBe(true);
    expect(files.some((f) => /\/sharp-libvips-linux-x64\/lib\/libvips-cpp\.so/.test(f))).toBe(true);
    expect(files.some((f) => f.endsWith(".tmp"))).toBe(false);
    // The run folder stays untouched.
    expect(readdirSync(runDir)).toEqual(["probe"]);
  });

  test("second run reuses the cached files without rewriting them", async () => {
    const before = snapshotCache(join(cacheHome, "resd"));
    const r = await run([binary], runDir, isolatedEnv({ HOME: home, XDG_CACHE_HOME: cacheHome }));
    expectProbeOutput(r);
    expect(snapshotCache(join(cacheHome, "resd"))).toEqual(before);
  });

  test("a corrupted cached library is detected by hash and rewritten", async () => {
    const before = snapshotCache(join(cacheHome, "resd"));
    const lib = Object.keys(before).find((f) => f.includes("libvips-cpp.so"))!;
    const path = join(cacheHome, "resd", lib);
    const bytes = readFileSync(path);
    bytes[4096] = bytes[4096]! ^ 0xff;
    writeFileSync(path, bytes);

    const r = await run([binary], runDir, isolatedEnv({ HOME: home, XDG_CACHE_HOME: cacheHome }));
    expectProbeOutput(r);
    const after = snapshotCache(join(cacheHome, "resd"));
    expect(after[lib]!.sha256).toBe(before[lib]!.sha256);
    expect(after[lib]!.ino).not.toBe(before[lib]!.ino); // replaced via rename
  });

  test("falls back to the temp folder when the home folder is not usable", async () => {
    // HOME is a regular file, so ~/.cache cannot be created (works even as root).
    const fileHome = join(work, "not-a-dir");
    writeFileSync(fileHome, "");
    const r = await run([binary], runDir, isolatedEnv({ HOME: fileHome }));
    expectProbeOutput(r);
    const uid = process.getuid?.();
    const tmpCache = join(work, "tmp", uid === undefined ? "resd" : `resd-${uid}`);
    expect(Object.keys(snapshotCache(tmpCache)).some((f) => f.includes("libvips-cpp.so"))).toBe(true);
    expect(statSync(tmpCache).mode & 0o077).toBe(0);
  });
});

test("running from source loads sharp from node_modules (no plugin involved)", async () => {
  const r = await run([process.execPath, PROBE], ROOT, { ...(process.env as Record<string, string>) });
  expectProbeOutput(r);
});

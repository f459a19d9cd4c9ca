/**
 * The compiled `resd` executable, built once per test run (bun test runs every file in one process)
 * and copied alone into an empty folder outside the checkout by each test that needs it.
 */
import { copyFileSync, mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "./site";

let built: Promise<string> | null = null;

function build(): Promise<string> {
  return (async () => {
    const out = join(mkdtempSync(join(tmpdir(), "resd-build-")), "resd");
    const b = Bun.spawn([process.execPath, "build.ts", "--outfile", out], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
    const [, err, code] = await Promise.all([new Response(b.stdout).text(), new Response(b.stderr).text(), b.exited]);
    if (code !== 0) throw new Error(`build failed: ${err}`);
    return out;
  })();
}

/** A fresh empty folder holding only the binary; returns the folder and the binary's path. */
export async function loneBinary(prefix = "resd-bin-"): Promise<{ work: string; binary: string }> {
  const src = await (built ??= build());
  const work = mkdtempSync(join(tmpdir(), prefix));
  mkdirSync(join(work, "run"));
  const binary = join(work, "run", "resd");
  copyFileSync(src, binary);
  return { work, binary };
}

/** The environment a self-hoster's shell would give: no Bun, no node_modules, a home of its own. */
export const bareEnv = (work: string, extra: Record<string, string> = {}) => ({ PATH: "/usr/bin:/bin", HOME: work, TMPDIR: work, ...extra });

/**
 * sharp's native packages for another platform (e.g. linux-arm64 on an x64 build machine): the
 * package manager skips them as "unsupported platform", so the build fetches the exact versions sharp
 * pins with `npm pack` into a cache folder under dist/, in a node_modules layout the embed plugin
 * resolves from.
 */
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";

/** The folder holding `node_modules/@img/...` for `platform`, fetched if absent. Throws on failure. */
export function fetchSharpNative(platform: string, sharpDir: string, cacheRoot: string): string {
  const pins = (JSON.parse(readFileSync(join(sharpDir, "package.json"), "utf8")) as { optionalDependencies?: Record<string, string> }).optionalDependencies ?? {};
  const root = join(cacheRoot, platform);
  for (const name of [`@img/sharp-${platform}`, `@img/sharp-libvips-${platform}`]) {
    const version = pins[name];
    if (!version) throw new Error(`sharp pins no ${name}`);
    const dest = join(root, "node_modules", name);
    if (existsSync(join(dest, "package.json")) && JSON.parse(readFileSync(join(dest, "package.json"), "utf8")).version === version) continue;
    rmSync(dest, { recursive: true, force: true });
    mkdirSync(dest, { recursive: true });
    const pack = Bun.spawnSync(["npm", "pack", `${name}@${version}`, "--silent", "--pack-destination", root], { cwd: root, stderr: "pipe" });
    const tgz = pack.stdout.toString().trim().split("\n").pop();
    if (pack.exitCode !== 0 || !tgz) throw new Error(`npm pack ${name}@${version} failed: ${pack.stderr.toString().trim()}`);
    const untar = Bun.spawnSync(["tar", "xzf", join(root, tgz), "-C", dest, "--strip-components=1"], { stderr: "pipe" });
    rmSync(join(root, tgz), { force: true });
    if (untar.exitCode !== 0) throw new Error(`cannot unpack ${tgz}: ${untar.stderr.toString().trim()}`);
  }
  return root;
}

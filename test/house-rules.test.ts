/**
 * The house rules (.dependency-cruiser.cjs, docs/architecture.md): the tree keeps them, and the
 * check really fails, naming the path, on a tree that breaks them.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { ROOT } from "./helpers/site";

const CRUISER = join(ROOT, "node_modules/.bin/depcruise");
const CONFIG = join(ROOT, ".dependency-cruiser.cjs");

function cruise(cwd: string) {
  const r = Bun.spawnSync([process.execPath, CRUISER, "src", "cli", "--config", CONFIG, "--output-type", "err"], { cwd, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString() + r.stderr.toString() };
}

const dirs: string[] = [];
afterAll(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "resd-house-"));
  dirs.push(dir);
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: { module: "ESNext", moduleResolution: "bundler", jsx: "react-jsx" } }));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

describe("the house rules", () => {
  test("resd's own tree keeps them: no cycle, imports point one way", () => {
    const r = cruise(ROOT);
    expect(r.out).toContain("no dependency violations found");
    expect(r.code).toBe(0);
  });

  test("a cycle fails with its path, a type-only one too", () => {
    const r = cruise(tree({
      "src/core/a.ts": 'import { b } from "./b";\nexport const a = () => b();\n',
      "src/core/b.ts": 'import type { A } from "./c";\nexport const b = (x?: A) => x;\n',
      "src/core/c.ts": 'import { a } from "./a";\nexport type A = ReturnType<typeof a>;\n',
      "cli/main.ts": "export {};\n",
    }));
    expect(r.code).not.toBe(0);
    expect(r.out).toMatch(/no-cycles: src\/core\/a\.ts →\s+src\/core\/b\.ts →\s+src\/core\/c\.ts →\s+src\/core\/a\.ts/);
  });

  test("the core importing HTTP, HTTP importing the CLI, the admin importing core code: each fails", () => {
    const r = cruise(tree({
      "src/core/domain.ts": 'import { route } from "../http/route";\nexport const domain = route;\n',
      "src/http/route.ts": 'import { cmd } from "../../cli/cmd";\nexport const route = cmd;\n',
      "cli/cmd.ts": "export const cmd = 1;\n",
      "src/admin/page.tsx": 'import { helper } from "../core/helper";\nimport type { T } from "../core/types";\nexport const page = (t: T) => helper(t);\n',
      "src/core/helper.ts": "export const helper = (x: unknown) => x;\n",
      "src/core/types.ts": "export type T = string;\n",
    }));
    expect(r.code).not.toBe(0);
    expect(r.out).toContain("core-knows-no-http: src/core/domain.ts → src/http/route.ts");
    expect(r.out).toContain("http-not-cli: src/http/route.ts → cli/cmd.ts");
    expect(r.out).toContain("admin-speaks-only-the-api: src/admin/page.tsx → src/core/helper.ts");
    // A type taken from the core is allowed.
    expect(r.out).not.toContain("src/admin/page.tsx → src/core/types.ts");
  });
});

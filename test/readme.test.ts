/** The README is part of the product: its settings, example and CLI reference follow the code. */
import { expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SETTINGS } from "../src/core/config";
import { buildDefinition } from "../src/core/definitions/load";
import { cli, makeSite, ROOT } from "./helpers/site";

const readme = readFileSync(join(ROOT, "README.md"), "utf8");

test("every setting is documented with its default", () => {
  for (const spec of Object.values(SETTINGS)) expect(readme).toContain(`| \`${spec.env}\``);
});

test("the example definition is valid", () => {
  const m = /`resources\/articles\.json`:\n\n```json\n([\s\S]*?)```/.exec(readme);
  expect(m).not.toBeNull();
  const def = buildDefinition("articles", JSON.parse(m![1]), "README.md");
  expect(def.unique).toEqual(["slug"]);
});

test("the two set-up commands install the pinned Bun and are what CI runs", () => {
  expect(readme).toContain("npm install -g bun@1.4.5 && bun install --frozen-lockfile && bun run serve");
  expect(readme).toContain("npm install -g bun@1.4.5 && bun install --frozen-lockfile && bun run test");
  expect(readFileSync(join(ROOT, ".ci/run"), "utf8")).toContain("npm install -g bun@1.4.5 && bun install --frozen-lockfile && bun run test");
});

test("the CLI reference names every command", async () => {
  const r = await cli(makeSite(), ["--help"]);
  const commands = [...r.stdout.matchAll(/^\s{2}(\w+)/gm)].map((m) => m[1]).filter((c) => c !== "help");
  expect(commands.length).toBeGreaterThan(8);
  for (const c of commands) expect(readme).toContain(`resd ${c}`);
});

test("the CI seeding script runs as written", () => {
  const m = /## In CI: seed a site[\s\S]*?```bash\n([\s\S]*?)```/.exec(readme);
  expect(m).not.toBeNull();
  const { MAIN } = require("./helpers/site") as { MAIN: string };
  // `resd` on the PATH is the real CLI (exec'd, so `$!` is the server as with the binary);
  // everything else is the script exactly as the README shows it.
  const bin = mkdtempSync(join(tmpdir(), "resd-bin-"));
  writeFileSync(join(bin, "resd"), `#!/bin/sh\nexec bun "${MAIN}" "$@"\n`, { mode: 0o755 });
  const script = `${m![1]}\nrm -rf "$RESD_DIR"\necho SEEDED-OK`;
  const p = Bun.spawnSync(["bash", "-c", script], { env: { ...process.env, RESD_DIR: "", PATH: `${bin}:${process.env.PATH}` }, timeout: 60_000 });
  rmSync(bin, { recursive: true, force: true });
  expect(p.stderr.toString()).toBe("");
  expect(p.exitCode).toBe(0);
  expect(p.stdout.toString()).toContain("SEEDED-OK");
}, 60_000);

/** The README is part of the product: its settings, example and CLI reference follow the code. */
import { expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SETTINGS } from "../src/core/config";
import { buildDefinition } from "../src/core/definitions/load";
import { adminSite, cli, MAIN, makeSite, ROOT, serve, siteEnv } from "./helpers/site";
import { loneBinary } from "./helpers/binary";

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

test("the CI seeding script runs as written, with the `resd` that Quick start gives", () => {
  const m = /## In CI: seed a site[\s\S]*?```bash\n([\s\S]*?)```/.exec(readme);
  expect(m).not.toBeNull();
  // Quick start's lines that are not the two install commands: what they give this shell (PATH).
  const quick = /## Quick start[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)![1];
  const given = quick.split("\n").filter((l) => l && !l.startsWith("#") && !l.startsWith("npm install -g bun"));
  expect(given.length).toBeGreaterThan(0);
  // From the clone's folder, as after Quick start; everything else is the script exactly as shown.
  const script = `${given.join("\n")}\n${m![1]}\nrm -rf "$RESD_DIR"\necho SEEDED-OK`;
  const p = Bun.spawnSync(["bash", "-c", script], { cwd: ROOT, env: { ...process.env, RESD_DIR: "" }, timeout: 110_000 });
  expect(p.stderr.toString()).toBe("");
  expect(p.exitCode).toBe(0);
  expect(p.stdout.toString()).toContain("SEEDED-OK");
}, 120_000);

/** Runs `command` on a pseudo-terminal (script(1)), typing each answer once its prompt is shown. */
async function onTerminal(command: string, cwd: string, env: Record<string, string | undefined>, answers: [prompt: string, typed: string][]) {
  const p = Bun.spawn(["script", "-qefc", command, "/dev/null"], { cwd, env, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  let screen = "";
  const reading = (async () => { for await (const chunk of p.stdout as ReadableStream<Uint8Array>) screen += new TextDecoder().decode(chunk); })();
  for (const [prompt, typed] of answers) {
    const end = Date.now() + 20_000;
    while (!screen.includes(prompt) && Date.now() < end && p.exitCode === null) await Bun.sleep(20);
    p.stdin.write(`${typed}\r`);
    await p.stdin.flush();
  }
  const code = await p.exited;
  await reading;
  p.stdin.end();
  return { code, screen };
}

test("the tour, pasted as written into a second terminal while the server runs, answers no 404", async () => {
  const m = /## A five-minute tour[\s\S]*?```sh\n([\s\S]*?)```[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme);
  expect(m).not.toBeNull();
  const [, addUser, rest] = m!;
  // "The same folder" as `bun run serve`: a folder whose `bun run resd` is this clone's CLI.
  const dir = makeSite();
  copyFileSync(join(ROOT, "bunfig.toml"), join(dir, "bunfig.toml"));
  writeFileSync(join(dir, "package.json"), JSON.stringify({ scripts: { resd: `bun ${MAIN}`, serve: `bun ${MAIN} serve` } }));
  const env = { ...process.env, RESD_DIR: "", ...siteEnv(dir) };
  const server = await serve(dir);
  try {
    const add = await onTerminal(addUser.trim(), dir, env, [["New password: ", "tour-password-1"], ["Repeat it: ", "tour-password-1"]]);
    expect(add.code, add.screen).toBe(0);
    expect(add.screen).toContain("created user admin@example.com");
    // The rest in one go, line after line with no pause: the server is the test's (a free port).
    const tour = rest.replaceAll("localhost:8080", new URL(server.base).host);
    const p = Bun.spawnSync(["bash", "-c", tour], { cwd: dir, env, timeout: 110_000 });
    const out = p.stdout.toString();
    expect(p.exitCode, p.stderr.toString()).toBe(0);
    expect(out).not.toContain('"code":404');
    expect(out).toContain('"code":201');
    expect(out).toMatch(/"code":200,"success":true,"status":"ok","count":1,"total":1,"notes":\{/);
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);

test("the typed-client lines run as written in a fresh clone after the README's install command", async () => {
  const m = /A typed\s+client in three lines[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme);
  expect(m).not.toBeNull();
  const lines = m![1].split("\n").filter((l) => l && !l.startsWith("#")).map((l) => l.replace(/\s+# .*$/, ""));
  expect(lines.some((l) => l.startsWith("npx openapi-typescript "))).toBe(true);
  // A fresh clone as far as packages go: the manifest and lockfile, then Quick start's install.
  const clone = mkdtempSync(join(tmpdir(), "resd-clone-"));
  for (const f of ["package.json", "bun.lock", "bunfig.toml"]) copyFileSync(join(ROOT, f), join(clone, f));
  const s = await adminSite({ defs: { notes: { fields: { title: { type: "text", required: true } } } } });
  try {
    const install = Bun.spawnSync([process.execPath, "install", "--frozen-lockfile"], { cwd: clone, timeout: 120_000 });
    expect(install.exitCode, install.stderr.toString()).toBe(0);
    const script = lines.join("\n").replaceAll("localhost:8080", new URL(s.base).host);
    const p = Bun.spawnSync(["bash", "-ec", script], { cwd: clone, env: { ...process.env, TOKEN: s.token }, timeout: 120_000 });
    expect(p.exitCode, p.stderr.toString()).toBe(0);
    const types = readFileSync(join(clone, "resd.d.ts"), "utf8");
    expect(types).toContain('"/api/v1/notes/{uuid}"');
  } finally {
    await s.cleanup();
    rmSync(clone, { recursive: true, force: true });
  }
}, 180_000);

test("the binary's size in the README is what the build makes", async () => {
  const { work, binary } = await loneBinary("resd-readme-");
  const mib = statSync(binary).size / 1048576;
  rmSync(work, { recursive: true, force: true });
  const said = /dist\/resd \(linux-x64, ([\d.]+) MiB\)/.exec(readme);
  expect(said).not.toBeNull();
  expect(Math.abs(Number(said![1]) - mib)).toBeLessThan(1);
  // The performance table's row says how its figures were measured.
  expect(readme).toMatch(/\| binary start to first answer \/ idle memory \(`bun run build && bun bench\/binary\/run\.ts`/);
}, 180_000);

test("README and docs/records.md say the same about when a definition change applies", () => {
  const flat = (t: string) => t.replace(/\s+/g, " ");
  const records = flat(readFileSync(join(ROOT, "docs/records.md"), "utf8"));
  const rule = "A new or changed definition is served without a restart, within a few milliseconds of the write";
  expect(flat(readme)).toContain(rule);
  expect(records).toContain(rule);
  expect(records).not.toContain("applied at the next start");
  for (const text of [flat(readme), records]) expect(text).toContain("250 ms after the last change");
});

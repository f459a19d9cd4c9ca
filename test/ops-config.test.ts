/** One precedence (flag > RESD_* env > DIR/.env > default), shown by `resd config`; bad values stop start-up. */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cli, makeSite, MAIN } from "./helpers/site";

type Row = { name: string; env: string; value: string; source: string };
const dirs: string[] = [];
afterAll(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

function site(dotenv: string) {
  const dir = makeSite({ files: { ".env": dotenv } });
  dirs.push(dir);
  return dir;
}

/** The test's environment without any RESD_* / AI_* variable: an empty value would hide Bun's autoload. */
const bareEnv = () => Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(RESD|AI)_/.test(k))) as Record<string, string>;

async function configIn(cwd: string, dir: string) {
  const p = Bun.spawn([process.execPath, MAIN, "config", "--json", "--dir", dir], { cwd, env: bareEnv(), stdout: "pipe", stderr: "pipe" });
  const out = JSON.parse(await new Response(p.stdout).text()) as Row[];
  expect(await p.exited).toBe(0);
  return Object.fromEntries(out.map((x) => [x.name, x]));
}

async function rows(dir: string, args: string[] = [], env: Record<string, string> = {}) {
  const r = await cli(dir, ["config", "--json", ...args], { env });
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  return Object.fromEntries((JSON.parse(r.stdout) as Row[]).map((x) => [x.name, x]));
}

describe("precedence", () => {
  test("flag over env over DIR/.env over default, each reported with its source", async () => {
    const dir = site("RESD_PORT=7001\nRESD_TOKEN_TTL=900\n");
    const clean = { RESD_PORT: "", RESD_TOKEN_TTL: "", RESD_HOST: "" };
    let c = await rows(dir, ["--port", "7003"], { ...clean, RESD_PORT: "7002" });
    expect(c.port).toMatchObject({ value: "7003", source: "flag", env: "RESD_PORT" });
    c = await rows(dir, [], { ...clean, RESD_PORT: "7002" });
    expect(c.port).toMatchObject({ value: "7002", source: "env" });
    c = await rows(dir, [], clean);
    expect(c.port).toMatchObject({ value: "7001", source: ".env" });
    expect(c.tokenTtl).toMatchObject({ value: "900", source: ".env" });
    expect(c.host).toMatchObject({ value: "0.0.0.0", source: "default" });
    expect(c.maxUpload).toMatchObject({ value: String(50 * 1024 * 1024), source: "default" });
    expect(c.dir).toMatchObject({ value: dir, source: "flag" });
  });

  test("a DIR/.env value is reported as .env even though Bun would load ./.env into the environment (cwd = DIR)", async () => {
    const secret = "dotenv-secret-value-0123456789";
    const dir = site(`RESD_TOKEN_SECRET=${secret}\nRESD_SESSION_TTL=3600\n`);
    const c = await configIn(dir, dir);
    expect(c.tokenSecret.source).toBe(".env");
    expect(c.sessionTtl).toMatchObject({ value: "3600", source: ".env" });
  });

  test("a .env in the working directory (not the site's) configures nothing", async () => {
    const dir = site("");
    const elsewhere = mkdtempSync(join(tmpdir(), "resd-cwd-"));
    dirs.push(elsewhere);
    writeFileSync(join(elsewhere, ".env"), "RESD_PORT=7777\nRESD_MAX_LIMIT=5\n");
    const c = await configIn(elsewhere, dir);
    expect(c.port).toMatchObject({ value: "8080", source: "default" });
    expect(c.maxLimit).toMatchObject({ value: "0", source: "default" });
  });
});

describe("resd config output", () => {
  test("secrets are masked in text and JSON; every setting is listed with source and variable", async () => {
    const secret = "very-secret-signing-key-abcdef123456";
    const aiKey = "sk-ai-key-should-not-show-987654";
    const dir = site(`RESD_TOKEN_SECRET=${secret}\n`);
    const text = await cli(dir, ["config"], { env: { AI_API_KEY: aiKey } });
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^SETTING\s+VALUE\s+SOURCE\s+VARIABLE\n/);
    expect(text.stdout).toMatch(/\nport\s+8080\s+default\s+RESD_PORT\n/);
    expect(text.stdout).toMatch(/\ntokenSecret\s+\S*\(masked\)\s+\.env\s+RESD_TOKEN_SECRET\n/);
    expect(text.stdout).toMatch(/\naiApiKey\s+\S*\(masked\)\s+env\s+AI_API_KEY\n/);
    const json = await cli(dir, ["config", "--json"], { env: { AI_API_KEY: aiKey } });
    for (const out of [text.stdout, json.stdout]) {
      expect(out).not.toContain(secret.slice(0, 8));
      expect(out).not.toContain(aiKey.slice(3, 12));
    }
  });

  test("resd config writes nothing (no secret generated into a fresh site)", async () => {
    const dir = makeSite();
    dirs.push(dir);
    const c = await rows(dir);
    expect(c.tokenSecret).toMatchObject({ value: "", source: "default" });
    expect(await Bun.file(join(dir, ".env")).exists()).toBe(false);
  });
});

describe("invalid values stop `resd serve` with a message naming the setting", () => {
  const cases: [string, string[], Record<string, string>, string, RegExp][] = [
    ["port abc from the environment", [], { RESD_PORT: "abc" }, "", /port \(RESD_PORT\) from env: "abc"/],
    ["port abc as a flag", ["--port", "abc"], {}, "", /port \(RESD_PORT\) from flag: "abc"/],
    ["port out of range", ["--port", "70000"], {}, "", /port \(RESD_PORT\)/],
    ["negative upload limit in DIR/.env", [], { RESD_MAX_UPLOAD: "" }, "RESD_MAX_UPLOAD=-1\n", /maxUpload \(RESD_MAX_UPLOAD\) from \.env: "-1"/],
    ["non-numeric shutdown timeout", [], { RESD_SHUTDOWN_TIMEOUT: "soon" }, "", /shutdownTimeout \(RESD_SHUTDOWN_TIMEOUT\)/],
    ["a memory mapping past SQLite's limit (it would silently be less)", [], { RESD_MMAP_SIZE: "4294967296" }, "", /mmapSize \(RESD_MMAP_SIZE\) from env: "4294967296"/],
  ];
  for (const [name, args, env, dotenv, message] of cases) {
    test(name, async () => {
      const dir = site(dotenv);
      const r = await cli(dir, ["serve", "--host", "127.0.0.1", ...args], { env });
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(message);
      expect(r.stdout).not.toContain("listening");
    });
  }
});

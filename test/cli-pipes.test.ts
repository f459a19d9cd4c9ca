/** The CLI in shell pipelines: standard input in, a closed stdout out, usage errors exit 2. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { cli, makeSite, MAIN } from "./helpers/site";

let dir: string;
beforeAll(() => { dir = makeSite({ defs: { notes: { fields: { title: { type: "text" }, n: { type: "number" } } } } }); });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs a shell pipeline; `rc` is the exit status of its command number `at` (resd's). */
function pipeline(script: string, at = 0) {
  const p = Bun.spawnSync(["bash", "-c", `set -o pipefail; ${script}; echo "rc=\${PIPESTATUS[${at}]}" >&2`], { env: { ...process.env, MAIN, DIR: dir } });
  const err = p.stderr.toString();
  return { out: p.stdout.toString(), err: err.replace(/rc=\d+\n$/, ""), rc: Number(/rc=(\d+)\n$/.exec(err)?.[1]) };
}

describe("pipes", () => {
  test("`resd import R -` reads standard input; the format is sniffed, or named with --format", async () => {
    const csv = pipeline(`printf 'title,n\\none,1\\ntwo,2\\n' | bun "$MAIN" import notes - --dir "$DIR"`, 1);
    expect(csv.rc).toBe(0);
    expect(csv.out).toContain("created 2");
    const json = pipeline(`printf '[{"title":"three"}]' | bun "$MAIN" import notes - --format json --dir "$DIR"`, 1);
    expect(json.rc).toBe(0);
    expect(json.out).toContain("created 1");
    const bad = pipeline(`printf 'x' | bun "$MAIN" import notes - --format xml --dir "$DIR"`, 1);
    expect(bad.rc).toBe(2);
    expect(bad.err).toContain("--format");
    // The spooled copy of standard input is gone.
    expect(readdirSync(tmpdir()).filter((n) => n.startsWith("resd-import-"))).toEqual([]);
  });

  test("a reader that stops early (`| head -1`) ends the export quietly with exit 0", async () => {
    const rows = Array.from({ length: 30_000 }, (_, i) => ({ title: `row ${i} ${"x".repeat(40)}`, n: i }));
    await Bun.write(`${dir}/many.json`, JSON.stringify(rows));
    expect((await cli(dir, ["import", "notes", `${dir}/many.json`])).code).toBe(0);
    for (const format of ["csv", "json"]) {
      const r = pipeline(`bun "$MAIN" export notes --format ${format} --dir "$DIR" | head -c 100 > /dev/null`);
      expect(r.err).toBe("");
      expect(r.rc).toBe(0);
    }
  });
});

describe("exit codes of usage errors", () => {
  test("unknown command, unknown option, missing argument: 2; help and version: 0", async () => {
    expect((await cli(dir, ["nope"])).code).toBe(2);
    expect((await cli(dir, ["export", "notes", "--bogus"])).code).toBe(2);
    const missing = await cli(dir, ["import", "notes"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("missing required argument");
    expect((await cli(dir, ["--help"])).code).toBe(0);
    expect((await cli(dir, ["--version"])).code).toBe(0);
  });
});

describe("secrets off the command line, idempotent seeding", () => {
  test("--password-stdin reads the password; --if-missing leaves an existing user unchanged, exit 0", async () => {
    const add = pipeline(`printf 'seed-password-1\\n' | bun "$MAIN" user add seed@example.com --password-stdin --role admin --api --dir "$DIR"`, 1);
    expect(add.rc).toBe(0);
    expect(add.out).toContain("created user seed@example.com");
    // The password came through: a token is issued for it.
    const token = pipeline(`bun "$MAIN" token seed@example.com --dir "$DIR"`);
    expect(token.rc).toBe(0);
    const again = pipeline(`printf 'other-password-2\\n' | bun "$MAIN" user add SEED@example.com --password-stdin --if-missing --json --dir "$DIR"`, 1);
    expect(again.rc).toBe(0);
    expect(JSON.parse(again.out)).toMatchObject({ existed: true });
    // Without --if-missing a second add is refused.
    expect(pipeline(`printf 'x-password-3\\n' | bun "$MAIN" user add seed@example.com --password-stdin --dir "$DIR"`, 1).rc).toBe(2);
    // No password at all, or both ways at once: refused with 2.
    expect((await cli(dir, ["user", "add", "nopw@example.com"])).code).toBe(2);
    expect(pipeline(`printf 'p\\n' | bun "$MAIN" user add both@example.com --password-stdin --password x --dir "$DIR"`, 1).rc).toBe(2);
    const passwd = pipeline(`printf 'changed-password-4\\n' | bun "$MAIN" user passwd seed@example.com --password-stdin --dir "$DIR"`, 1);
    expect(passwd.rc).toBe(0);
  });
});

describe("readiness for CI", () => {
  test("serve --port 0 --port-file: the chosen port is written once listening, and removed on shutdown", async () => {
    const file = `${dir}/port`;
    const proc = Bun.spawn([process.execPath, MAIN, "serve", "--dir", dir, "--port", "0", "--host", "127.0.0.1", "--port-file", file], { stdout: "ignore", stderr: "ignore" });
    let port = "";
    for (let i = 0; i < 200 && !port; i++) {
      await Bun.sleep(50);
      if (await Bun.file(file).exists()) port = (await Bun.file(file).text()).trim();
    }
    expect(port).toMatch(/^\d+$/);
    expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);
    proc.kill("SIGTERM");
    expect(await proc.exited).toBe(0);
    expect(await Bun.file(file).exists()).toBe(false);
  });
});

describe("clear errors", () => {
  test("--out with an extension resd does not write is refused (exit 2, nothing written) unless --format names one", async () => {
    const r = await cli(dir, ["export", "notes", "--out", `${dir}/x.xlsx`]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(".xlsx");
    expect(await Bun.file(`${dir}/x.xlsx`).exists()).toBe(false);
    expect((await cli(dir, ["export", "notes", "--out", `${dir}/x.xlsx`, "--format", "csv"])).code).toBe(0);
  });

  test("success messages are not prefixed like errors", async () => {
    // resd backup copies a SQLite site (a PostgreSQL one is refused: see access-attacks).
    const local = makeSite({ store: "sqlite" });
    expect((await cli(local, ["migrate"])).code).toBe(0); // the site's database exists
    const b = await cli(local, ["backup", "--out", `${local}/b.tar`]);
    rmSync(local, { recursive: true, force: true });
    expect(b.code).toBe(0);
    expect(b.stdout).toStartWith("backup of ");
  });
});

/**
 * What a newcomer types and is refused for no good reason, or refused in words that do not say
 * why (issue 33): `--dir` and `--json` before the subcommand, an output file in a folder that does
 * not exist, a port that is taken. Each runs the real command.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cli, MAIN, makeSite, siteEnv } from "./helpers/site";

let dir: string;
beforeAll(async () => {
  dir = makeSite({ defs: { notes: { fields: { title: { type: "text" } } } } });
  expect((await cli(dir, ["user", "add", "a@example.com", "--password", "a-long-password", "--api"])).code).toBe(0);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The CLI exactly as given: no `--dir` added at the end (cli() adds one), run outside the site. */
async function resd(args: string[], env: Record<string, string> = {}) {
  const p = Bun.spawn([process.execPath, MAIN, ...args], {
    cwd: join(dir, ".."),
    env: { ...process.env, RESD_DIR: "", ...siteEnv(dir), ...env },
    stdin: "ignore", stdout: "pipe", stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, stdout, stderr };
}

test("--dir before the subcommand names the site, as after it", async () => {
  const before = await resd(["--dir", dir, "user", "list"]);
  expect(before.stderr).toBe("");
  expect(before.code).toBe(0);
  expect(before.stdout).toContain("a@example.com");
  expect(before.stdout).toBe((await resd(["user", "list", "--dir", dir])).stdout);
  expect((await resd(["user", "--dir", dir, "list"])).stdout).toBe(before.stdout);
  const deep = await resd(["--dir", dir, "export", "notes", "--format", "csv"]);
  expect(deep.code, deep.stderr).toBe(0);
  expect(deep.stdout).toStartWith("uuid,");
});

test("--json before the subcommand too; the option after the subcommand wins over the one before", async () => {
  const r = await resd(["--json", "--dir", dir, "user", "list"]);
  expect(r.code, r.stderr).toBe(0);
  expect((JSON.parse(r.stdout) as { email: string }[]).map((u) => u.email)).toEqual(["a@example.com"]);
  const elsewhere = makeSite();
  const both = await resd(["--dir", elsewhere, "user", "list", "--json", "--dir", dir]);
  expect(both.code, both.stderr).toBe(0);
  expect(both.stdout).toContain("a@example.com");
  rmSync(elsewhere, { recursive: true, force: true });
});

test("a global option the subcommand does not take is a usage error (exit 2) that names both", async () => {
  const r = await resd(["--json", "serve", "--dir", dir, "--port", "0"]);
  expect(r.code).toBe(2);
  expect(r.stderr).toContain("--json");
  expect(r.stderr).toContain("serve");
});

test("export --out into a folder that does not exist: one clear sentence, exit 2", async () => {
  const r = await cli(dir, ["export", "notes", "--out", "/nonexistent/x.csv"]);
  expect(r.code).toBe(2);
  expect(r.stderr).toBe("resd: --out /nonexistent/x.csv: the folder /nonexistent does not exist\n");
  const folder = join(dir, "out-is-a-folder");
  mkdirSync(folder);
  const f = await cli(dir, ["export", "notes", "--out", folder]);
  expect(f.code).toBe(2);
  expect(f.stderr).toBe(`resd: --out ${folder}: is a folder; name a file in it\n`);
  const file = join(dir, "a-file");
  writeFileSync(file, "x");
  const under = await cli(dir, ["export", "notes", "--out", join(file, "x.csv")]);
  expect(under.code).toBe(2);
  expect(under.stderr).toBe(`resd: --out ${join(file, "x.csv")}: ${file} is not a folder\n`);
});

test("backup --out into a folder that does not exist: the same sentence, exit 2", async () => {
  const local = makeSite({ store: "sqlite" });
  const r = await cli(local, ["backup", "--out", "/nonexistent/site.tar.gz"]);
  expect(r.code).toBe(2);
  expect(r.stderr).toBe("resd: --out /nonexistent/site.tar.gz: the folder /nonexistent does not exist\n");
  rmSync(local, { recursive: true, force: true });
});

test("serve on a port in use: the message names the port, exit 2", async () => {
  const taken = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("taken") });
  try {
    const r = await cli(dir, ["serve", "--port", String(taken.port), "--host", "127.0.0.1"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`resd: port ${taken.port} on 127.0.0.1 is in use (another resd, or another server); choose another with --port or RESD_PORT (0: any free port)\n`);
  } finally {
    taken.stop(true);
  }
}, 30_000);

test("serve on an address this machine does not have: said with the address, exit 2", async () => {
  const r = await cli(dir, ["serve", "--port", "0", "--host", "192.0.2.1"]);
  expect(r.code).toBe(2);
  expect(r.stderr).toBe("resd: 192.0.2.1 is not an address of this machine (--host or RESD_HOST)\n");
}, 30_000);

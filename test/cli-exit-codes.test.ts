/**
 * The README's exit-code table, command by command: 0 done, 2 refused input (usage errors included),
 * 1 a failure, 3 rejected import rows. Each row runs the real command.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cli, makeSite } from "./helpers/site";

let dir: string;
beforeAll(async () => {
  dir = makeSite({ defs: { notes: { fields: { title: { type: "text", required: true } } } } });
  expect((await cli(dir, ["user", "add", "a@example.com", "--password", "a-long-password", "--api"])).code).toBe(0);
  writeFileSync(join(dir, "ok.csv"), "title\none\n");
  writeFileSync(join(dir, "bad.csv"), "title\none\n\"\n");
  writeFileSync(join(dir, "rows.csv"), "title,nope\n");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Row = [string, string[], number];
const rows: Row[] = [
  // usage errors of every command: an unknown option
  ...["serve", "migrate", "user list", "role list", "token a@example.com", "config", "backup", "restore x.tar", "jobs list", "import notes ok.csv", "export notes"]
    .map((c): Row => [`${c}: unknown option`, [...c.split(" "), "--no-such-option"], 2]),
  ["unknown command", ["frobnicate"], 2],
  ["missing argument (token)", ["token"], 2],
  ["missing argument (import)", ["import", "notes"], 2],
  // refused input
  ["migrate: fine", ["migrate"], 0],
  ["user add: invalid e-mail", ["user", "add", "not-an-email", "--password", "a-long-password"], 2],
  ["role set: no such role", ["role", "set", "nope", "view-notes"], 2],
  ["token: no such user", ["token", "ghost@example.com"], 2],
  ["config: invalid setting", ["config", "--port", "abc"], 2],
  ["jobs retry: not a job id", ["jobs", "retry", "xyz"], 2],
  ["import: unknown column", ["import", "notes", "rows.csv"], 2],
  ["import: unterminated quote", ["import", "notes", "bad.csv"], 2],
  ["export: unknown resource", ["export", "nothing"], 2],
  ["restore: not an archive", ["restore", "ok.csv"], 2],
  ["serve: invalid port", ["serve", "--port", "99999"], 2],
  // done
  ["import: fine", ["import", "notes", "ok.csv"], 0],
  ["export: fine", ["export", "notes", "--format", "csv"], 0],
  ["role list", ["role", "list"], 0],
  ["token", ["token", "a@example.com"], 0],
];

for (const [name, args, code] of rows) {
  const usage = args.includes("--no-such-option") || name.startsWith("unknown command") || name.startsWith("missing argument");
  // A usage error is refused by the argument parser before the command opens the site: those rows
  // run side by side (each is a process of its own). The others open the site, one at a time.
  (usage ? test.concurrent : test)(`${name} → exit ${code}`, async () => {
    const r = await cli(dir, args.map((a) => (a.endsWith(".csv") || a.endsWith(".tar") ? join(dir, a) : a)));
    expect(r.code, r.stderr).toBe(code);
    // commander words usage errors ("error: unknown option …"); resd's own refusals start "resd: ".
    if (code !== 0) expect(r.stderr).toStartWith(usage ? "error: " : "resd: ");
  }, 120_000); // side by side, each waits for the others' share of the cores
}

test("a failure that is not the input's fault (the output cannot be written) exits 1", async () => {
  // /proc takes no new files, for root neither.
  // resd backup copies a SQLite site (a PostgreSQL one is refused with 2: see access-attacks).
  const local = makeSite({ store: "sqlite" });
  for (const [site, args] of [[dir, ["export", "notes", "--out", "/proc/resd-test.csv"]], [local, ["backup", "--out", "/proc/resd-test.tar"]]] as const) {
    const r = await cli(site, [...args]);
    expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(1);
    expect(r.stderr).toStartWith("resd: ");
  }
  rmSync(local, { recursive: true, force: true });
});

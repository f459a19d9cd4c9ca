/** One statement through Debian's `psql` against `url`; its output trimmed, or an error with psql's message. */
export function psql(url: string, sql: string): string {
  const r = Bun.spawnSync(["psql", url, "-qXtAc", sql], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`psql ${sql}: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}

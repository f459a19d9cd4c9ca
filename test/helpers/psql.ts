/** One statement through Debian's `psql` against `url`; its output trimmed, or an error with psql's message. */
export function psql(url: string, sql: string): string {
  const r = Bun.spawnSync(["psql", url, "-qXtAc", sql], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`psql ${sql}: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}

/**
 * Databases of their own on the server at `admin` (a URL of any database there): `create` makes one
 * named `<prefix>_<random>` and returns its URL; `dropAll` (a file's afterAll) drops every one made.
 */
export function databasesOn(admin: string): { create(prefix: string): string; dropAll(): void } {
  const made: string[] = [];
  return {
    create(prefix) {
      const name = `${prefix}_${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
      psql(admin, `CREATE DATABASE ${name}`);
      made.push(name);
      const url = new URL(admin);
      url.pathname = `/${name}`;
      return url.toString();
    },
    dropAll() {
      for (const name of made.splice(0)) psql(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

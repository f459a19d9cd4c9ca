/** Git for the deploy tests: a fixed author, no user or system config, and a definition file's text. */

/** The environment every test git command runs with: the same author, nobody's own settings. */
export const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: "Ann Author", GIT_AUTHOR_EMAIL: "ann@example.com",
  GIT_COMMITTER_NAME: "Ann Author", GIT_COMMITTER_EMAIL: "ann@example.com",
  GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1",
};

/** Runs git in a folder; its trimmed output, or an error with git's words. */
export function gitIn(cwd: string, ...args: string[]): string {
  const r = Bun.spawnSync(["git", ...args], { cwd, env: GIT_ENV, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}

/** A resource definition file's text, as a developer would commit it. */
export const def = (fields: Record<string, unknown>, extra: Record<string, unknown> = {}) => `${JSON.stringify({ fields, ...extra }, null, 2)}\n`;

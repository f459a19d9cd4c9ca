/**
 * Runs the system `git` for the site's deploy endpoints: an argument list (no shell), the site
 * folder as working directory, the caller's own environment (so their credentials, SSH keys and
 * `~/.gitconfig` work as in their shell) plus `GIT_TERMINAL_PROMPT=0`, and a hard time bound.
 *
 * git runs in a session of its own (`detached`: setsid), so neither it nor the ssh it starts has a
 * terminal to ask a password on — a missing credential fails at once instead of hanging — and the
 * bound kills the whole process group (git, ssh, remote helpers), not git alone.
 */

export type GitResult = { code: number; stdout: string; stderr: string; timedOut: boolean };

/** git is not on the PATH (or cannot be started). */
export class GitMissing extends Error {}

/** The bound of local commands (status, log, merge of files already fetched). */
export const LOCAL_TIMEOUT_MS = 30_000;

export type GitOptions = {
  timeoutMs?: number;
  /** Read-only commands pass true: `git status` then never takes the index lock a pull may hold. */
  readOnly?: boolean;
  /** More environment (GIT_INDEX_FILE for a temporary index). */
  env?: Record<string, string>;
};

export async function git(cwd: string, args: string[], opts: GitOptions = {}): Promise<GitResult> {
  const env: Record<string, string | undefined> = {
    ...process.env,
    GIT_TERMINAL_PROMPT: "0",
    // git's words are shown to the caller and recognised here: the same language everywhere.
    LC_ALL: "C",
    LANGUAGE: "C",
    ...opts.env,
  };
  if (opts.readOnly) env.GIT_OPTIONAL_LOCKS = "0";
  let proc;
  try {
    proc = Bun.spawn(["git", ...args], { cwd, env, stdin: "ignore", stdout: "pipe", stderr: "pipe", detached: true });
  } catch (e) {
    throw new GitMissing(`git cannot be run on this machine: ${(e as Error).message}`);
  }
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try {
      process.kill(-proc.pid, "SIGKILL");
    } catch {
      proc.kill("SIGKILL");
    }
  }, opts.timeoutMs ?? LOCAL_TIMEOUT_MS);
  try {
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    return { code, stdout, stderr, timedOut };
  } finally {
    clearTimeout(timer);
  }
}

/** `git …` that must succeed: its stdout, or an Error carrying git's words. */
export async function gitOut(cwd: string, args: string[], opts: GitOptions = {}): Promise<string> {
  const r = await git(cwd, args, opts);
  if (r.code !== 0) throw new Error(words(r) || `git ${args[0]} failed (exit ${r.code})`);
  return r.stdout;
}

/** What git said, credentials masked, trimmed; or that it ran out of time. */
export function words(r: GitResult, timeoutMs = LOCAL_TIMEOUT_MS): string {
  if (r.timedOut) return `git did not finish within ${Math.round(timeoutMs / 1000)} s and was stopped`;
  return maskCredentials((r.stderr.trim() || r.stdout.trim()).slice(0, 4000));
}

/**
 * Hides credentials in any text git prints or a remote URL: `scheme://user:password@host` becomes
 * `scheme://user:***@host`, and a lone user part of an http(s) URL (most often an access token,
 * `https://<TOKEN>@host`) becomes `***`. `git@host:repo` and `ssh://git@host` carry no secret and
 * stay as they are. The user part is everything up to the last "@" before the host that is no
 * white space, "/", "?" or "#": every character RFC 3986 allows there (unreserved, %XX, the
 * sub-delims ! $ & ' ( ) * + , ; = and ":") and the ones people put there anyway ("@", quotes).
 */
export function maskCredentials(text: string): string {
  return text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)([^\s/?#]+)@/gi, (_m, scheme: string, userinfo: string) => {
    const colon = userinfo.indexOf(":");
    if (colon >= 0) return `${scheme}${userinfo.slice(0, colon)}:***@`;
    return /^https?:\/\//i.test(scheme) ? `${scheme}***@` : `${scheme}${userinfo}@`;
  });
}

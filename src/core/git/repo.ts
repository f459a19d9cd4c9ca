/**
 * Facts about the git checkout a site folder is in, each asked of git itself: where it is, the
 * branch and its upstream, the last commit, how far apart they are, the local changes, fetching.
 * Paths are as git gives them: relative to the checkout's top folder (which may hold the site
 * folder further down: `prefix`).
 */
import { statSync } from "node:fs";
import { resolve } from "node:path";
import { git, gitOut, GitMissing, maskCredentials, words, type GitResult } from "./run";

export type Checkout = {
  /** The site folder: every command runs here. */
  dir: string;
  /** The checkout's top folder. */
  top: string;
  /** Where the site folder is inside the checkout: "" at the top, else "site/" and the like. */
  prefix: string;
};

export type Commit = { commit: string; subject: string; author: string; time: number };
export type ChangedPath = { path: string; state: string; from?: string };
export type Upstream = { name: string; remote: string; url: string | null };

/** The checkout holding `dir`, or why there is none (no git, not a checkout): git's own words. */
export async function findCheckout(dir: string): Promise<{ checkout: Checkout } | { reason: string }> {
  let r: GitResult;
  try {
    r = await git(dir, ["rev-parse", "--show-toplevel", "--show-prefix"], { readOnly: true });
  } catch (e) {
    if (e instanceof GitMissing) return { reason: `git is not installed on this machine (${e.message})` };
    throw e;
  }
  if (r.code !== 0) return { reason: words(r) };
  const [top, prefix = ""] = r.stdout.split("\n");
  return { checkout: { dir, top, prefix } };
}

/** The branch checked out; null when HEAD is detached. */
export async function currentBranch(c: Checkout): Promise<string | null> {
  const r = await git(c.dir, ["symbolic-ref", "-q", "--short", "HEAD"], { readOnly: true });
  return r.code === 0 ? r.stdout.trim() : null;
}

/** The branch's upstream (`origin/main`) and its remote's URL, credentials masked; else git's words why not. */
export async function upstreamOf(c: Checkout, branch: string | null): Promise<{ upstream: Upstream } | { reason: string }> {
  const r = await git(c.dir, ["rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}"], { readOnly: true });
  if (r.code !== 0 || !branch) return { reason: words(r) || "HEAD does not point to a branch" };
  const remote = (await git(c.dir, ["config", "--get", `branch.${branch}.remote`], { readOnly: true })).stdout.trim() || ".";
  const url = remote === "." ? null : await git(c.dir, ["remote", "get-url", remote], { readOnly: true });
  const shownUrl = url && url.code === 0 ? maskCredentials(url.stdout.trim()) : null;
  return { upstream: { name: maskCredentials(r.stdout.trim()), remote: maskCredentials(remote), url: shownUrl } };
}

/**
 * `git log -z` with this format: four NUL-terminated fields a commit (a commit's subject and author
 * cannot hold NUL: git refuses it), so no text in a commit can make up another one.
 */
const FORMAT = "%H%x00%ct%x00%an%x00%s";
const FIELDS = 4;
/** Subjects are shown up to this many characters (a commit message may be megabytes long). */
const MAX_SUBJECT = 1000;

function parseCommits(out: string): Commit[] {
  const parts = out.split("\0");
  const commits: Commit[] = [];
  for (let i = 0; i + FIELDS <= parts.length; i += FIELDS) {
    const [commit, time, author, subject] = parts.slice(i, i + FIELDS);
    if (!/^[0-9a-f]{40,64}$/.test(commit) || !/^\d+$/.test(time)) throw new Error(`git log gave a record it should not: ${JSON.stringify(commit.slice(0, 80))}`);
    commits.push({ commit, subject: subject.length > MAX_SUBJECT ? `${subject.slice(0, MAX_SUBJECT)}…` : subject, author, time: Number(time) });
  }
  return commits;
}

/** The last commit; null on a branch with no commit yet. */
export async function headCommit(c: Checkout, rev = "HEAD"): Promise<Commit | null> {
  const r = await git(c.dir, ["log", "-z", "-1", `--format=${FORMAT}`, rev, "--"], { readOnly: true });
  return r.code === 0 && r.stdout ? parseCommits(r.stdout)[0] ?? null : null;
}

/** The commits in `to` and not in `from`, oldest first (at most `max`). */
export async function commitsBetween(c: Checkout, from: string, to: string, max = 500): Promise<Commit[]> {
  const out = await gitOut(c.dir, ["log", "-z", "--reverse", `--max-count=${max}`, `--format=${FORMAT}`, `${from}..${to}`, "--"], { readOnly: true });
  return parseCommits(out);
}

/** Commits HEAD has that the upstream has not, and the other way round. */
export async function aheadBehind(c: Checkout): Promise<{ ahead: number; behind: number } | null> {
  const r = await git(c.dir, ["rev-list", "--left-right", "--count", "HEAD...@{upstream}"], { readOnly: true });
  if (r.code !== 0) return null;
  const [ahead, behind] = r.stdout.trim().split(/\s+/).map(Number);
  return { ahead, behind };
}

/** `git status` in short: each changed, staged, conflicted or untracked path with its state. */
export async function localChanges(c: Checkout): Promise<ChangedPath[]> {
  const out = await gitOut(c.dir, ["status", "--porcelain=v1", "-z", "--untracked-files=normal"], { readOnly: true });
  const parts = out.split("\0");
  const changes: ChangedPath[] = [];
  for (let i = 0; i < parts.length; i++) {
    const entry = parts[i];
    if (entry.length < 4) continue;
    const xy = entry.slice(0, 2);
    const change: ChangedPath = { path: entry.slice(3), state: stateOf(xy) };
    // A rename or copy is followed by the path it came from.
    if (xy[0] === "R" || xy[0] === "C") change.from = parts[++i];
    changes.push(change);
  }
  return changes;
}

const STATES: Record<string, string> = { M: "modified", A: "added", D: "deleted", R: "renamed", C: "copied", T: "type-changed" };

function stateOf(xy: string): string {
  if (xy === "??") return "untracked";
  if (xy === "!!") return "ignored";
  if (xy.includes("U") || xy === "AA" || xy === "DD") return "conflicted";
  // The working tree's change when there is one, else the staged one.
  return STATES[xy[1]] ?? STATES[xy[0]] ?? "changed";
}

/** When the remote was last fetched (seconds since the epoch, from FETCH_HEAD); null if never. */
export async function lastFetched(c: Checkout): Promise<number | null> {
  const path = (await git(c.dir, ["rev-parse", "--git-path", "FETCH_HEAD"], { readOnly: true })).stdout.trim();
  try {
    return Math.floor(statSync(resolve(c.dir, path)).mtimeMs / 1000);
  } catch {
    return null;
  }
}

export type FetchOutcome = { fetched: true } | { fetched: false; reason: string };

/** Fetches in flight, by checkout: callers asking meanwhile share the one fetch. */
const fetching = new Map<string, Promise<FetchOutcome>>();

/** `git fetch <remote>`, bounded; a failure or the bound is an outcome, with git's words. */
export function fetchRemote(c: Checkout, remote: string, timeoutMs: number): Promise<FetchOutcome> {
  const key = `${c.top}\0${remote}`;
  const running = fetching.get(key);
  if (running) return running;
  const p = (async (): Promise<FetchOutcome> => {
    const r = await git(c.dir, ["fetch", "--quiet", remote], { timeoutMs });
    return r.code === 0 ? { fetched: true } : { fetched: false, reason: words(r, timeoutMs) };
  })().finally(() => fetching.delete(key));
  fetching.set(key, p);
  return p;
}

/** The full commit a revision names; null when it names none. */
export async function resolveCommit(c: Checkout, rev: string): Promise<string | null> {
  const r = await git(c.dir, ["rev-parse", "--verify", "--quiet", `${rev}^{commit}`], { readOnly: true });
  return r.code === 0 ? r.stdout.trim() : null;
}

/** Whether `a` is an ancestor of `b` (or the same commit). */
export async function isAncestor(c: Checkout, a: string, b: string): Promise<boolean> {
  const r = await git(c.dir, ["merge-base", "--is-ancestor", a, b], { readOnly: true });
  if (r.code > 1) throw new Error(words(r));
  return r.code === 0;
}

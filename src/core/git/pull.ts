/**
 * `POST /api/v1/git-pull`: brings the site folder up to its upstream, fast-forward only, and serves
 * the new definitions at once. Nothing moves until everything is known to work:
 *
 * 1. refusals (409, git's words in `details`): no checkout, no upstream, a branch that has diverged
 *    (never a merge, never a rebase), local changes in files the pull would change (git's own
 *    dry run of the fast-forward), another pull of this site still running;
 * 2. the definitions the site would serve afterwards are loaded from a temporary copy exactly as
 *    `resd serve` loads them, and changed extension code is compiled (not run): 422 naming the file;
 * 3. the schema changes those definitions imply are applied as `resd migrate` applies them, in one
 *    transaction: a change the database refuses (duplicate values for a new unique field; on
 *    PostgreSQL, a definition older than the stored schema) is rolled back, 422;
 * 4. only then the working tree moves (`git merge --ff-only`) and the definitions are reloaded.
 *
 * Extension code is loaded at start only: changed files are listed with `restart_needed`.
 */
import { basename } from "node:path";
import { AppError } from "../errors";
import type { Principal } from "../access/permissions";
import type { Site } from "../site";
import type { ResourceDef } from "../definitions/types";
import type { SchemaChange } from "../store/types";
import { authorizeGit, PULL_GIT } from "./access";
import { commitsBetween, currentBranch, fetchRemote, findCheckout, isAncestor, resolveCommit, upstreamOf, type Checkout, type Commit } from "./repo";
import { git, gitOut, words } from "./run";
import { checkExtensionCode, definitionsAfter, inSite, invalidFile, isDefinition, type Change } from "./stage";

/**
 * A pull's fetch has the status's bound: the whole pull must answer within the server's idle
 * timeout (30 s), after which the connection is dropped.
 */
export const PULL_FETCH_TIMEOUT_MS = 20_000;

export type PullResult = {
  pulled: { from: string; to: string; branch: string; upstream: string; commits: Omit<Commit, "time">[]; changed: string[] };
  definitions: { added: string[]; changed: string[]; removed: string[] };
  /** What syncing tables and indexes changed (as `resd migrate` reports it). */
  migrations: SchemaChange[];
  /** Extension code changed: it runs from the next start, the old code until then. */
  restart_needed: boolean;
  restart_files: string[];
  note?: string;
};

/** Sites with a pull running (one at a time per site). */
const pulling = new WeakSet<Site>();

export async function gitPull(site: Site, p: Principal): Promise<PullResult> {
  await authorizeGit(site, p, PULL_GIT);
  if (pulling.has(site)) throw refusal("busy", "a pull of this site is already running; ask again once it has answered");
  pulling.add(site);
  try {
    return await pull(site);
  } finally {
    pulling.delete(site);
  }
}

/** A 409 with git's words (or ours) in `details` and what kind of refusal it is. */
const refusal = (kind: string, details: string, extra: Record<string, unknown> = {}) =>
  new AppError(409, "RESOURCE_EXISTS", details, { refusal: kind, ...extra });

async function pull(site: Site): Promise<PullResult> {
  const found = await findCheckout(site.config.dir);
  if ("reason" in found) throw refusal("not-a-checkout", found.reason);
  const c = found.checkout;
  const branch = await currentBranch(c);
  const up = await upstreamOf(c, branch);
  if ("reason" in up) throw refusal("no-upstream", up.reason, { hint: "set one in a shell: git branch --set-upstream-to=origin/<branch>" });
  const upstream = up.upstream;
  if (upstream.remote !== ".") {
    const f = await fetchRemote(c, upstream.remote, PULL_FETCH_TIMEOUT_MS);
    if (!f.fetched) throw new AppError(502, "BAD_GATEWAY", f.reason, { refusal: "fetch-failed" });
  }
  const from = await resolveCommit(c, "HEAD");
  const to = await resolveCommit(c, "@{upstream}");
  if (!from || !to) throw refusal("no-upstream", "the branch or its upstream has no commit yet");
  const done = (commits: Commit[], changed: string[], defs: PullResult["definitions"], migrations: SchemaChange[], restart: string[]): PullResult => ({
    pulled: { from, to: commits.length ? to : from, branch: branch!, upstream: upstream.name, commits: commits.map(({ time: _t, ...rest }) => rest), changed },
    definitions: defs,
    migrations,
    restart_needed: restart.length > 0,
    restart_files: restart,
    ...(restart.length ? { note: `extension code changed (${restart.join(", ")}): extensions are loaded at start only, so the old code runs until resd is restarted` } : {}),
  });
  // Up to date, or only ahead: nothing to take.
  if (await isAncestor(c, to, from)) return done([], [], { added: [], changed: [], removed: [] }, [], []);
  if (!(await isAncestor(c, from, to))) {
    throw refusal("diverged", await divergedWords(c), { hint: "resd only fast-forwards (no merge, no rebase): push or drop the local commits in a shell, then pull again" });
  }
  const changes = await changesBetween(c, from, to);
  await refuseLocalChanges(c, to, changes);
  const after = await definitionsAfter(c, to, changes, from);
  const restart = await checkExtensionCode(c, to, changes, from);
  // Taken before anything moves: the definitions watcher may reload as soon as files change.
  const before = served(site);
  const touched = new Set(changes.map((ch) => inSite(c, ch.path)).filter(isDefinition).map((rel) => basename(rel, ".json")));
  const migrations = await applySchema(site, c, after, touched, from);
  const merged = await git(c.dir, ["merge", "--ff-only", "--quiet", to]);
  if (merged.code !== 0) {
    await undoSchema(site);
    throw refusal("merge-failed", words(merged));
  }
  try {
    await site.reload();
    site.reloadFailure = null;
  } catch (e) {
    throw new AppError(500, "RESOURCE_UPDATE_FAILED", `pulled to ${to.slice(0, 12)}, but the definitions did not load; the previous ones stay in force: ${shown(c, (e as Error).message)}`);
  }
  const commits = await commitsBetween(c, from, to);
  return done(commits, changes.map((ch) => ch.path), compare(before, served(site)), migrations, restart);
}

/** The paths `from`..`to` changes, renames as a deletion and an addition. */
async function changesBetween(c: Checkout, from: string, to: string): Promise<Change[]> {
  const parts = (await gitOut(c.dir, ["diff", "--name-status", "--no-renames", "-z", from, to], { readOnly: true })).split("\0");
  const out: Change[] = [];
  for (let i = 0; i + 1 < parts.length; i += 2) if (parts[i]) out.push({ status: parts[i][0], path: parts[i + 1] });
  return out;
}

/**
 * git's own dry run of the fast-forward (the two-tree merge `git merge --ff-only` does): it fails,
 * in git's words, where a local change (staged or not) or an untracked file stands in the way.
 * Local changes to files the pull does not touch stay, as git keeps them.
 */
async function refuseLocalChanges(c: Checkout, to: string, changes: Change[]) {
  await git(c.dir, ["update-index", "-q", "--refresh"]);
  const r = await git(c.dir, ["read-tree", "-n", "-m", "-u", "HEAD", to]);
  if (r.code === 0) return;
  const touched = new Set(changes.map((ch) => ch.path));
  const status = await git(c.dir, ["status", "--porcelain=v1", "-z", "--untracked-files=all"], { readOnly: true });
  const files = status.stdout.split("\0").filter((e) => e.length > 3).map((e) => e.slice(3)).filter((path) => touched.has(path));
  throw refusal("local-changes", words(r), { files, hint: "commit, move or drop these local changes in a shell (git stash, git checkout -- <file>), then pull again" });
}

/** The sentence `git status` gives a diverged branch. */
async function divergedWords(c: Checkout): Promise<string> {
  const out = (await git(c.dir, ["status", "-uno"], { readOnly: true })).stdout;
  const lines = out.split("\n");
  const start = lines.findIndex((l) => l.startsWith("Your branch"));
  if (start < 0) return "the branch and its upstream have diverged";
  const sentence: string[] = [];
  for (const l of lines.slice(start)) {
    if (!l.trim() || l.startsWith("  (")) break;
    sentence.push(l.trim());
  }
  return sentence.join(" ");
}

/** The site's own name for paths in a message (resources/x.json rather than the absolute path). */
const shown = (c: Checkout, message: string) => message.split(`${c.dir}/`).join("");

/**
 * Tables and indexes brought in line with the definitions after the pull, in one transaction as
 * `resd migrate` does; what the database refuses undoes it all (422).
 */
async function applySchema(site: Site, c: Checkout, after: Map<string, ResourceDef>, touched: Set<string>, from: string): Promise<SchemaChange[]> {
  let changes: SchemaChange[];
  try {
    changes = await site.store.syncSchema(after.values());
  } catch (e) {
    // The stores name the definition's file first: "<file>: cannot create index …".
    const def = [...after.values()].find((d) => d.file && (e as Error).message.startsWith(`${d.file}: `));
    if (!def?.file) throw e;
    const file = shown(c, def.file);
    // The field a new unique index failed on: the unique fields the pull adds to the resource.
    const old = site.defs.get(def.name);
    const added = def.unique.filter((f) => !old?.unique.includes(f));
    throw invalidFile(file, added.length ? added.join(", ") : null, shown(c, (e as Error).message).slice(`${file}: `.length), from);
  }
  // A definition the pull brings that is older than the stored schema (PostgreSQL): refused. One
  // the pull leaves alone and that was refused already stays as it was, not served.
  const refused = changes.filter((ch) => ch.action === "refused" && touched.has(ch.resource));
  if (refused.length) {
    await undoSchema(site);
    throw invalidFile(`resources/${refused[0].resource}.json`, null, refused[0].detail, from);
  }
  return changes;
}

/** Back to the definitions in force (made the newest version again where the pull's moved on). */
async function undoSchema(site: Site) {
  await site.store.syncSchema(site.defs.values(), { rollback: true }).catch(() => undefined);
}

/** What the site serves, each definition as its JSON; one refused (older than the stored schema) as "refused". */
function served(site: Site): Map<string, string> {
  const out = new Map([...site.defs].map(([n, d]) => [n, JSON.stringify(d.raw)]));
  for (const name of site.refused.keys()) out.set(name, "refused");
  return out;
}

function compare(before: Map<string, string>, after: Map<string, string>): PullResult["definitions"] {
  const added = [...after.keys()].filter((n) => !before.has(n));
  const changed = [...after.keys()].filter((n) => before.has(n) && before.get(n) !== after.get(n));
  const removed = [...before.keys()].filter((n) => !after.has(n));
  return { added: added.sort(), changed: changed.sort(), removed: removed.sort() };
}

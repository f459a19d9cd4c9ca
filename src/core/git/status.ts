/**
 * `GET /api/v1/git-status`: the site folder's git state for the dashboard — branch, upstream, last
 * commit, how far behind and ahead, local changes — after fetching the upstream's remote (bounded;
 * a fetch that fails or runs out of time is reported, and the state known so far is shown).
 * A site folder that is no git checkout, or a machine without git, is an answer too
 * (`available: false` and the reason), not an error.
 */
import type { Principal } from "../access/permissions";
import type { Site } from "../site";
import { authorizeGit, VIEW_GIT } from "./access";
import { aheadBehind, currentBranch, fetchRemote, findCheckout, headCommit, lastFetched, localChanges, upstreamOf, type ChangedPath, type Commit } from "./repo";

/** The fetch of a status is bounded by this; the dashboard asks on every visit. */
export const STATUS_FETCH_TIMEOUT_MS = 20_000;
/** Local changes listed at most (`changed_count` has them all). */
const MAX_CHANGED = 500;

export type GitStatus =
  | { available: false; reason: string }
  | {
    available: true;
    /** The checkout's top folder, and the site folder's place in it ("" at the top). */
    root: string;
    prefix: string;
    branch: string | null;
    upstream: string | null;
    /** Why there is no upstream (git's words). */
    upstream_reason?: string;
    remote: { name: string; url: string | null } | null;
    head: Commit | null;
    ahead: number | null;
    behind: number | null;
    changed: ChangedPath[];
    changed_count: number;
    fetched: boolean;
    /** Why nothing was fetched: asked not to, no upstream, the remote's failure or the time bound. */
    fetch_reason?: string;
    /** When the remote was last fetched (seconds since the epoch); null if never. */
    fetched_at: number | null;
  };

export async function gitStatus(site: Site, p: Principal, opts: { fetch: boolean }): Promise<GitStatus> {
  await authorizeGit(site, p, VIEW_GIT);
  const found = await findCheckout(site.config.dir);
  if ("reason" in found) return { available: false, reason: found.reason };
  const c = found.checkout;
  const branch = await currentBranch(c);
  const up = await upstreamOf(c, branch);
  const upstream = "upstream" in up ? up.upstream : null;
  let fetched = false;
  let fetchReason: string | undefined;
  if (!opts.fetch) fetchReason = "not asked to (fetch=0)";
  else if (!upstream) fetchReason = "the branch has no upstream";
  else if (upstream.remote === ".") fetchReason = "the upstream is a local branch";
  else {
    const f = await fetchRemote(c, upstream.remote, STATUS_FETCH_TIMEOUT_MS);
    fetched = f.fetched;
    if (!f.fetched) fetchReason = f.reason;
  }
  const [head, counts, changes, fetchedAt] = await Promise.all([headCommit(c), upstream ? aheadBehind(c) : null, localChanges(c), lastFetched(c)]);
  return {
    available: true,
    root: c.top,
    prefix: c.prefix,
    branch,
    upstream: upstream?.name ?? null,
    ...("reason" in up ? { upstream_reason: up.reason } : {}),
    remote: upstream && upstream.remote !== "." ? { name: upstream.remote, url: upstream.url } : null,
    head,
    ahead: counts?.ahead ?? null,
    behind: counts?.behind ?? null,
    changed: changes.slice(0, MAX_CHANGED),
    changed_count: changes.length,
    fetched,
    ...(fetchReason ? { fetch_reason: fetchReason } : {}),
    fetched_at: fetchedAt,
  };
}

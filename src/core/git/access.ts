/**
 * Who may see the site's git state and pull: `(all)`, or the feature permissions `view-git` and
 * `pull-git` held by the caller's role.
 *
 * `view-git` is spelled like "view the resource git", and a route file
 * `ext/uri/api/v1/git/index.tpl` with `[#api-allow get git#]` hands exactly that word to every
 * visitor (signed-in callers hold the anonymous allows too). So the word is looked up in the role
 * itself, never in the merged set, and no resource permission (`manage-git`, `api_(any)_git`, …)
 * stands in for it: a resource named `git` grants nothing here.
 */
import { denied, unauthorized } from "../errors";
import type { Principal } from "../access/permissions";
import { ALL, rolePermissions } from "../access/users";
import type { Site } from "../site";

export const VIEW_GIT = "view-git";
export const PULL_GIT = "pull-git";

/** Throws 401 for anyone but a signed-in user or token holder, 403 (naming `name`) unless their role holds it or `(all)`. */
export async function authorizeGit(site: Site, p: Principal, name: typeof VIEW_GIT | typeof PULL_GIT): Promise<void> {
  if (p.kind !== "user") throw unauthorized("sign in (or send a bearer token) to use the git endpoints");
  const own = await rolePermissions(site, p.role);
  if (own.has(ALL) || own.has(name)) return;
  throw denied([name], name === VIEW_GIT ? "seeing the site's git state needs view-git" : "pulling into the site needs pull-git");
}

/** What the caller may do here, for the OpenAPI document: the same answers as `authorizeGit`. */
export async function gitAccess(site: Site, p: Principal): Promise<{ view: boolean; pull: boolean }> {
  if (p.kind !== "user") return { view: false, pull: false };
  const own = await rolePermissions(site, p.role);
  const all = own.has(ALL);
  return { view: all || own.has(VIEW_GIT), pull: all || own.has(PULL_GIT) };
}

/**
 * Who made a record's changes, as people know them. History keeps user uuids (names and addresses
 * change); the admin shows a name. A signed-in caller who may read the history sees each author's
 * name; the e-mail address only when they may view users, so that reading a record's history is no
 * way to collect the addresses of a site's editors.
 */
import type { Site } from "../site";
import { can, type Principal } from "../access/permissions";
import { findUser } from "../access/users";

export type Author = { name: string | null; email?: string };

export async function historyAuthors(site: Site, p: Principal, uuids: Iterable<string | null>): Promise<Record<string, Author>> {
  if (p.kind === "anonymous") return {};
  const withEmail = can(p, "users", "view");
  const out: Record<string, Author> = {};
  for (const uuid of new Set(uuids)) {
    if (!uuid) continue;
    const user = await findUser(site, uuid);
    if (!user) continue;
    const name = typeof user.name === "string" && user.name.trim() ? user.name.trim() : null;
    out[uuid] = withEmail || p.uuid === uuid ? { name, email: user.email } : { name };
  }
  return out;
}

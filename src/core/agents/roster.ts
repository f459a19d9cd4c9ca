/**
 * Who a user may talk to: the site's agents (DIR/agents, the default `resd`) and the agents whose
 * home is another site (RESD_AGENT_REMOTES), each behind its permission `chat-<id>`.
 */
import { hasPermission, type Principal } from "../access/permissions";
import { denied } from "../errors";
import type { Site } from "../site";
import { AGENT_ID, DEFAULT_AGENT, loadAgents } from "./definitions";
import type { Agent } from "./run";

/** Where a remote agent lives and who the hub is there (from the URL's user part). */
export type Home = { url: string; email: string; password: string };
export type RosterAgent = Agent & { home?: Home };

export const chatPermission = (id: string) => `chat-${id}`;

/** RESD_AGENT_REMOTES: `id=https://user:password@home,…` (checked when the settings are read). */
export function remotesOf(setting: string): Map<string, Home> {
  const out = new Map<string, Home>();
  for (const entry of setting.split(",")) {
    const eq = entry.indexOf("=");
    if (eq < 0) continue;
    const id = entry.slice(0, eq).trim();
    if (!AGENT_ID.test(id)) continue;
    const u = new URL(entry.slice(eq + 1).trim());
    const home: Home = { url: `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, "")}`, email: decodeURIComponent(u.username), password: decodeURIComponent(u.password) };
    out.set(id, home);
  }
  return out;
}

/** Every agent of the site: its own, then the remote ones (a remote id wins over a file of the same name: the setting is explicit). */
export function roster(site: Site): Map<string, RosterAgent> {
  const all = new Map<string, RosterAgent>(loadAgents(site).agents);
  for (const [id, home] of remotesOf(site.config.agentRemotes)) {
    all.set(id, { id, name: id, description: `an agent of ${home.url}`, instructions: "", home });
  }
  return all;
}

/** The agents `p` may chat with, id → agent (`all`: the roster, when the caller has read it already). */
export function teamOf(site: Site, p: Principal, all = roster(site)): Map<string, RosterAgent> {
  const team = new Map<string, RosterAgent>();
  if (p.kind !== "user") return team;
  for (const [id, a] of all) if (hasPermission(p, chatPermission(id))) team.set(id, a);
  return team;
}

/** The team, or 403 naming the permissions that would open the chat. */
export function requireTeam(site: Site, p: Principal, all = roster(site)): Map<string, RosterAgent> {
  const team = teamOf(site, p, all);
  if (team.size) return team;
  const ids = [...all.keys()];
  throw denied((ids.length ? ids : [DEFAULT_AGENT]).map(chatPermission), "chatting with agents needs chat-<agent> for at least one agent");
}

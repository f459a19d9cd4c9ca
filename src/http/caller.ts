/**
 * Who is asking, as the store's fair share of list queries counts callers (see
 * core/store/fair-share.ts): a signed-in user by account, an anonymous client by its address. Not
 * all anonymous callers as one: one anonymous flood would then use up the share of every anonymous
 * visitor. IPv6 clients count by their /64, which one client usually holds whole (it could
 * otherwise ask from a new address each time). Behind a reverse proxy every anonymous client has
 * the proxy's address and they share one turn; X-Forwarded-For is not read, since a client could
 * name itself anew for every query and so pass any bound.
 */
import type { Server } from "bun";
import type { Principal } from "../core/access/permissions";

import type { Site } from "../core/site";

/**
 * The server that serves a site, which alone can tell a request's peer address. Kept per site, not
 * per request: a note on every request (a WeakMap entry each) cost the busiest paths a few per cent.
 */
const servers = new WeakMap<Site, () => Server<undefined>>();

/** `serverOf` is read when asked: the server exists only once Bun.serve has returned. */
export function servedBy(site: Site, serverOf: () => Server<undefined>): void {
  servers.set(site, serverOf);
}

/** An IPv4 address as it is, an IPv6 address as its /64 (an IPv4 address mapped into IPv6 as IPv4). */
export function addressKey(address: string): string {
  const plain = address.replace(/%.*$/, "").toLowerCase();
  if (!plain.includes(":")) return plain;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(plain);
  if (mapped) return mapped[1];
  const [head, tail] = plain.split("::");
  const h = head ? head.split(":") : [];
  const t = tail ? tail.split(":") : [];
  const groups = tail === undefined ? h : [...h, ...Array<string>(Math.max(0, 8 - h.length - t.length)).fill("0"), ...t];
  return `${groups.slice(0, 4).map((g) => Number.parseInt(g || "0", 16).toString(16)).join(":")}::/64`;
}

/**
 * The key of `p` asking through `request`; undefined for the system principal (the server's own
 * work, never refused). An anonymous request whose address is unknown (a Unix socket, a request
 * rebuilt on another URL) counts as one shared caller.
 */
export function callerKey(site: Site, request: Request, p: Principal): string | undefined {
  if (p.kind === "user" && p.uuid) return `user:${p.uuid}`;
  if (p.kind === "system") return undefined;
  const address = servers.get(site)?.().requestIP(request)?.address;
  return address ? `address:${addressKey(address)}` : "anonymous";
}

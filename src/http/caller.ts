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

type Answer = (request: Request) => Response | Promise<Response>;

/** The server each request arrived at, which alone can tell its peer's address. */
const arrivals = new WeakMap<Request, Server<undefined>>();

/**
 * Notes the server of every request `answer` gets. `serverOf` is read per request: the server
 * exists only once Bun.serve, which takes this answer, has returned.
 */
export function notingArrivals(serverOf: () => Server<undefined>, answer: Answer): Answer {
  return (request) => {
    arrivals.set(request, serverOf());
    return answer(request);
  };
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
export function callerKey(request: Request, p: Principal): string | undefined {
  if (p.kind === "user" && p.uuid) return `user:${p.uuid}`;
  if (p.kind === "system") return undefined;
  const address = arrivals.get(request)?.requestIP(request)?.address;
  return address ? `address:${addressKey(address)}` : "anonymous";
}

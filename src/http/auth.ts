/** Works out who is calling: bearer token, session cookie, or an anonymous visitor. */
import { ANONYMOUS, type Principal } from "../core/access/permissions";
import { verifyToken } from "../core/access/tokens";
import { principalForUser } from "../core/access/users";
import type { Site } from "../core/site";
import { unauthorized } from "../core/errors";

export async function authenticate(site: Site, request: Request): Promise<Principal> {
  const header = request.headers.get("authorization");
  if (header) {
    const m = /^Bearer\s+(\S+)$/i.exec(header);
    if (!m) throw unauthorized("the Authorization header must be `Bearer <token>`");
    return principalForUser(site, await verifyToken(site, m[1]));
  }
  return ANONYMOUS;
}

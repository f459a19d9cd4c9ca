/** Who someone is, for messages such as "Changed by Ann a moment ago". */
import { api, type Envelope } from "./api";
import { me, resources } from "./state";
import { t } from "./i18n";

const names = new Map<string, Promise<string>>();

/**
 * A user's name, else e-mail, when the signed-in user may view users (they are in `.resources`);
 * "someone else" otherwise, for a change made by no user, or when the lookup fails.
 */
export function personName(uuid: string | null): Promise<string> {
  const someone = t("someone else");
  if (!uuid) return Promise.resolve(someone);
  const self = me.value;
  if (!resources.value.users) return Promise.resolve(self?.uuid === uuid ? self.email : someone);
  let name = names.get(uuid);
  if (!name) {
    name = api<Envelope & { users: Record<string, { name?: string; email?: string }> }>("GET", `/users/${encodeURIComponent(uuid)}`)
      .then((r) => {
        const u = r.body.users?.[uuid];
        return u?.name || u?.email || someone;
      })
      .catch(() => {
        names.delete(uuid);
        return someone;
      });
    names.set(uuid, name);
  }
  return name;
}

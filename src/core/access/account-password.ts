/**
 * A signed-in user changes their own password, giving the current one (guessed like at sign-in:
 * counted, and locked after too many). The new one follows the password rules; every session and
 * token of the user ends with the old password (the caller's own session is made anew by the HTTP
 * layer).
 */
import { AppError, unauthorized } from "../errors";
import { prepareValues } from "../records/prepare";
import { actor, writers } from "../records/service";
import type { Site } from "../site";
import { SYSTEM, type Principal } from "./permissions";
import { checkPassword } from "./login";
import { findUser, type UserRow } from "./users";

export async function changeOwnPassword(site: Site, p: Principal, body: { password?: unknown; new_password?: unknown }): Promise<UserRow> {
  if (p.kind !== "user" || !p.uuid) throw unauthorized("changing the password needs a signed-in user");
  if (typeof body.password !== "string" || body.password === "") throw new AppError(422, "INVALID_DATA", "`password` (the current one) is required", { errors: { password: "is required" } });
  if (typeof body.new_password !== "string" || body.new_password === "") throw new AppError(422, "INVALID_DATA", "`new_password` is required", { errors: { new_password: "is required" } });
  const me = await findUser(site, p.uuid);
  if (!me) throw unauthorized("not signed in");
  const def = site.resource("users");
  const values = await prepareValues(site.store, def, { password: body.new_password }, "update", me.uuid, { passwordMinLength: site.config.passwordMinLength })
    .catch((e: unknown) => {
      // The rules speak of `password`; here the field is `new_password`.
      if (e instanceof AppError && e.extra.errors?.password) throw new AppError(422, "INVALID_DATA", e.details, { errors: { new_password: e.extra.errors.password } });
      throw e;
    });
  await checkPassword(site, me, body.password);
  await site.store.transaction(async (tx) => {
    const row = await tx.get("users", me.uuid);
    if (!row) throw unauthorized("not signed in");
    await writers.updatePrepared(site, tx, def, row, values, actor(SYSTEM, "edit"));
  }, { exclusive: "users" });
  return (await findUser(site, me.uuid))!;
}

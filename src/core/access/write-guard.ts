/**
 * The request-level part of a write: may the caller create or edit records of this resource at all,
 * and without the form's spam fields. The rules of `users` and `roles` (who may give which role,
 * rename a role, switch on API access) are decided inside the write transaction by
 * account-guard.ts, on the state the write changes.
 */
import type { Site } from "../site";
import type { ResourceDef } from "../definitions/types";
import { asObject, type Values } from "../validation/object";
import { authorize, can, type Principal } from "./permissions";
import { stripFormFields } from "./forms";

export type WriteAction = "create" | "edit";
export { selfEditFields } from "./account-guard";

/** Authorizes a create or update of one record and returns the body to validate. */
export async function guardWrite(site: Site, p: Principal, def: ResourceDef, action: WriteAction, body: unknown, uuid?: string): Promise<Values> {
  // Users may save the self_edit fields of their own record without edit-users (checked in the write).
  const selfEdit = def.name === "users" && action === "edit" && p.kind === "user" && uuid !== undefined && uuid === p.uuid && !can(p, "users", "edit", uuid);
  if (!selfEdit) authorize(p, def.name, action, uuid);
  return stripFormFields(site, def.name, asObject(body));
}

/**
 * The one place that decides whether a caller may do an operation. Handlers and CLI commands never
 * look at roles; they call `authorize`.
 */
import { AppError, denied } from "../errors";

export type Action = "view" | "create" | "edit" | "delete" | "import" | "export" | "delete_all";

/** Legacy `api_{verb}_…` verbs of each action. */
const VERB: Record<Exclude<Action, "delete_all">, string> = {
  view: "get", create: "post", edit: "put", delete: "delete", import: "import", export: "export",
};

export type Principal = {
  kind: "user" | "anonymous" | "system";
  /** The user's uuid; null for anonymous and system callers. */
  uuid: string | null;
  email: string | null;
  role: string | null;
  permissions: ReadonlySet<string>;
  /** Authenticated by the session cookie (writes from another origin are refused). */
  viaSession?: boolean;
  /** An AI agent acting for this user (core/agents): its writes are in history as made through it. */
  agent?: string;
  /** The site's resource names: they settle what an ambiguous legacy name means (see below). */
  resources?: KnownResources;
  /** Authenticated by a personal API key (access/api-keys.ts); `permissions`: the key's own list, null for all of the user's rights. */
  apiKey?: { id: string; permissions: readonly string[] | null };
  /** Their role requires two-factor sign-in and they have not enrolled: only enrolment is open (http/auth.ts). */
  mustEnrol2fa?: boolean;
};

export type KnownResources = { has(name: string): boolean };

export const SYSTEM: Principal = { kind: "system", uuid: null, email: null, role: null, permissions: new Set(["(all)"]) };
export const ANONYMOUS: Principal = { kind: "anonymous", uuid: null, email: null, role: null, permissions: new Set() };

/**
 * Legacy names join resource and record with `_`, which resource names may contain too:
 * `api_get_foo_bar` is either "view resource foo_bar" or "view record bar of foo". A name is read
 * against the site's resources: when the part after the verb is a resource, it names that resource
 * (never a record), and `api_delete_resource_X` with X a resource is "delete all of X" (never a
 * record X of a resource called `resource`, nor deleting records of a resource `resource_X`).
 */
function recordPatternApplies(verb: string, resource: string, uuid: string, known?: KnownResources): boolean {
  if (!known) return true;
  if (known.has(`${resource}_${uuid}`)) return false;
  return !(verb === "delete" && resource === "resource" && known.has(uuid));
}

function resourcePatternApplies(verb: string, resource: string, known?: KnownResources): boolean {
  return !(known && verb === "delete" && resource.startsWith("resource_") && known.has(resource.slice("resource_".length)));
}

/** The patterns that grant an action, in the spec's order (they are also the 403's `needs`). */
export function grantingPatterns(resource: string, action: Action, uuid?: string, known?: KnownResources): string[] {
  if (action === "delete_all") return [`api_delete_resource_${resource}`];
  const verb = VERB[action];
  return [
    ...(uuid && recordPatternApplies(verb, resource, uuid, known) ? [`api_${verb}_${resource}_${uuid}`] : []),
    ...(resourcePatternApplies(verb, resource, known) ? [`api_${verb}_${resource}`] : []),
    `api_(any)_${resource}`,
    `api_${verb}_(any)`,
    "api_(any)",
    `${action}-${resource}`,
    `manage-${resource}`,
  ];
}

/** Per principal and resource: whether a resource-wide pattern grants viewing (reads ask it on every request). */
const viewers = new WeakMap<Principal, Map<string, boolean>>();

export function can(p: Principal, resource: string, action: Action, uuid?: string): boolean {
  if (p.permissions.has("(all)")) return true;
  const granted = (id?: string) => grantingPatterns(resource, action, id, p.resources).some((x) => p.permissions.has(x));
  // Only a delete's patterns depend on which resources exist (p.resources changes on reload).
  if (action !== "view") return granted(uuid);
  let views = viewers.get(p);
  if (!views) viewers.set(p, (views = new Map()));
  let wide = views.get(resource);
  if (wide === undefined) {
    wide = granted();
    if (views.size < 1000) views.set(resource, wide); // names not validated by every caller: bounded
  }
  return wide || (uuid !== undefined && granted(uuid));
}

/** Throws 403 ACCESS_DENIED with `needs` unless the principal may do the action. */
export function authorize(p: Principal, resource: string, action: Action, uuid?: string): void {
  if (can(p, resource, action, uuid)) return;
  throw denied(grantingPatterns(resource, action, uuid, p.resources), `${action.replace("_", " ")} on ${resource} needs one of the listed permissions`);
}

/** A permission on a dot resource (`view-.pages`, `manage-.files`): internal, never from an allow tag. */
export const isDotPermission = (name: string) => /^[a-z_]+-\./.test(name);

/**
 * A named permission such as `view-.files` or `manage-users`, with `(all)` as the wildcard.
 * Anonymous visitors (whose permissions are the allow tags') never hold a dot resource's.
 */
export function hasPermission(p: Principal, ...names: string[]): boolean {
  if (p.kind === "anonymous") names = names.filter((n) => !isDotPermission(n));
  return p.permissions.has("(all)") || names.some((n) => p.permissions.has(n));
}

export function requirePermission(p: Principal, ...names: string[]): void {
  if (!hasPermission(p, ...names)) throw new AppError(403, "ACCESS_DENIED", "permission required", { needs: names });
}

/** What the whole app shares: who is signed in and the resources they may see. */
import { signal } from "@preact/signals";
import { api, ApiError, type Envelope } from "./api";

export type OptionView = { value: string; label: string };
export type FieldView = {
  type: string; label: string; required: boolean; multi: boolean; i18n: boolean; write_only: boolean;
  options?: OptionView[]; resource?: string; source?: string; accept?: string; min?: number; max?: number;
  longitude_field?: string; wrapper_class?: string; fields?: Record<string, FieldView>;
  preserve_existing?: boolean; buttons?: string[]; media?: boolean; media_sizes?: string[]; paste_html?: boolean;
};
export type CustomButton = {
  kind: "command" | "block" | "list" | "wrap" | "insert" | "event" | "link";
  command?: string; tag?: string; class?: string; html?: string; event?: string;
  insert?: boolean; bubble?: boolean; active?: string; label?: string; icon?: string;
};
export type FilterView = { field: string; label: string; options: OptionView[]; default: string | null; multi: boolean };
export type ResourceView = {
  name: string; label: { singular: string; plural: string }; appbar: boolean; languages: string[];
  fields: Record<string, FieldView>; columns: string[]; filters: FilterView[];
  actions: { view_url: string; url: string | null }; sort: { field: string; order: "asc" | "desc" } | null; history: boolean;
  buttons: Record<string, CustomButton>; ai: boolean;
  can: { view: boolean; create: boolean; edit: boolean; delete: boolean; import: boolean; export: boolean; restore: boolean; delete_all: boolean };
};
export type Me = { uuid: string; email: string; role: string; admin: boolean };
type Meta = Envelope & { user: Me; permissions: string[]; settings: Settings; resources: Record<string, ResourceView> };
export type Settings = { map_tiles: string | null };

export const me = signal<Me | null>(null);
export const permissions = signal<Set<string>>(new Set());
export const resources = signal<Record<string, ResourceView>>({});
export const settings = signal<Settings>({ map_tiles: null });
/** "loading" until the first answer; "out" when nobody is signed in. */
export const status = signal<"loading" | "in" | "out">("loading");
/**
 * Signed in, but their role requires two-factor sign-in and they have not set it up: the server
 * answers them nothing else (403 naming "2fa"), so the admin shows only the profile's enrolment.
 */
export const mustEnrol2fa = signal(false);

/** Does this answer ask the caller to enrol in two-factor sign-in first (`needs` names "2fa")? */
export const needsTwoFactor = (body: Envelope) => String(body.needs ?? "").split(",").includes("2fa");

type SessionAnswer = Envelope & { user: { uuid: string; email: string; role?: string }; permissions: string[]; two_factor_required?: boolean };

/** Who is signed in, from `GET /session`, for a member who must enrol first (`.resources` refuses them). */
async function loadEnrolling(): Promise<boolean> {
  const r = await api<SessionAnswer>("GET", "/session").catch(() => null);
  if (!r?.body.two_factor_required) return false;
  const perms = new Set(r.body.permissions);
  me.value = { uuid: r.body.user.uuid, email: r.body.user.email, role: r.body.user.role ?? "", admin: perms.has("(all)") };
  permissions.value = perms;
  resources.value = {};
  mustEnrol2fa.value = true;
  status.value = "in";
  return true;
}

export async function loadMeta(): Promise<void> {
  try {
    const { body } = await api<Meta>("GET", "/.resources");
    me.value = body.user;
    permissions.value = new Set(body.permissions);
    resources.value = body.resources;
    settings.value = body.settings;
    mustEnrol2fa.value = false;
    status.value = "in";
  } catch (e) {
    if (e instanceof ApiError && e.status === 403 && needsTwoFactor(e.body) && (await loadEnrolling())) return;
    me.value = null;
    mustEnrol2fa.value = false;
    resources.value = {};
    status.value = "out";
  }
}

export const may = (name: string) => permissions.value.has("(all)") || permissions.value.has(name);

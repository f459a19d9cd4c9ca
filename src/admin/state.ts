/** What the whole app shares: who is signed in and the resources they may see. */
import { signal } from "@preact/signals";
import { api, type Envelope } from "./api";

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

export async function loadMeta(): Promise<void> {
  try {
    const { body } = await api<Meta>("GET", "/.resources");
    me.value = body.user;
    permissions.value = new Set(body.permissions);
    resources.value = body.resources;
    settings.value = body.settings;
    status.value = "in";
  } catch {
    me.value = null;
    resources.value = {};
    status.value = "out";
  }
}

export const may = (name: string) => permissions.value.has("(all)") || permissions.value.has(name);

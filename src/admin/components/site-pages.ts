/**
 * The site's pages as `/api/v1/.pages` gives them (docs/editing.md): route files, extension
 * endpoints and record pages, keyed by id (the md5 of the URL path). Shared by the Pages screen and
 * the html editor's link dialog.
 */
import { api, query, type Envelope } from "../api";
import { may, resources } from "../state";
import { t } from "../i18n";

/** The Pages screen: `-` is no resource name, so the path cannot collide with a resource's overview. */
export const PAGES_PATH = "/admin/-/pages";

export type PageKind = "route" | "endpoint" | "record";
export type SitePage = {
  id: string; url: string; kind: PageKind; _modified?: number;
  /** route */ file?: string; allows?: { operation: string; resource: string }[]; size?: number; text?: string;
  /** endpoint */ methods?: string[];
  /** record */ resource?: string; uuid?: string; title?: string | null; language?: string | null; published?: boolean;
};
export type PageQuery = { kind?: string; resource?: string; search?: string; limit?: number; offset?: number };

export const KINDS: PageKind[] = ["route", "endpoint", "record"];
export const isKind = (k: string | null): k is PageKind => (KINDS as string[]).includes(k ?? "");

/** A kind's name, in the singular and (for the filter) the plural. */
export const kindName = (k: PageKind): string => (k === "route" ? t("Route file") : k === "endpoint" ? t("Endpoint") : t("Record page"));
export const kindPlural = (k: PageKind): string => (k === "route" ? t("Route files") : k === "endpoint" ? t("Endpoints") : t("Record pages"));

/** May the user open the Pages screen (route files and endpoints)? */
export const mayViewPages = () => may("view-.pages") || may("manage-.pages");
/** May the user write route files (they can open anonymous writes)? */
export const mayManagePages = () => may("manage-.pages");

export async function listPages(q: PageQuery): Promise<{ pages: SitePage[]; total: number }> {
  const r = await api<Envelope & { pages: Record<string, SitePage> }>("GET", `/.pages${query(q)}`);
  const pages = Object.values(r.body.pages ?? {});
  return { pages, total: typeof r.body.total === "number" ? r.body.total : pages.length };
}

/** A record page's resource by its name in the admin, else its id. */
export const resourceLabel = (name: string | undefined): string => (name ? resources.value[name]?.label.singular ?? name : "");

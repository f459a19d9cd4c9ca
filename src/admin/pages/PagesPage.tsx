/**
 * The site's pages (`/admin/-/pages`; `-` is no resource name, so the path cannot collide with one):
 * route files, extension endpoints and record pages from `/api/v1/.pages`, with the kind, resource
 * and search filters and the page in the URL, as in the overview. A route file opens in its editor
 * (`/admin/-/pages/{id}`), a record page in the record's form.
 */
import { useEffect } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { location, setParams } from "../router";
import { resources } from "../state";
import { isKind, KINDS, kindName, kindPlural, listPages, mayManagePages, mayViewPages, PAGES_PATH, resourceLabel, type SitePage } from "../components/site-pages";
import { RouteFileEditor } from "../components/RouteFileEditor";
import { t, tn, when } from "../i18n";

const PAGE = 50;

/** What a page is, beyond its URL: the operations a route file opens, an endpoint's methods, a record's title. */
function About({ p }: { p: SitePage }) {
  if (p.kind === "route") {
    const allows = p.allows ?? [];
    return allows.length
      ? <>{t("Opens:")} {allows.map((a, i) => <span key={i} class="chip">{a.operation} {a.resource}</span>)}</>
      : <span class="muted">{t("No allow tags")}</span>;
  }
  if (p.kind === "endpoint") return <>{(p.methods ?? []).join(", ")} <span class="muted">{p.file}</span></>;
  return (
    <>
      {p.title || <span class="muted">{t("(no title)")}</span>}
      <span class="muted"> · {resourceLabel(p.resource)}{p.language ? ` · ${p.language}` : ""}</span>
      {p.published === false && <> <span class="chip">{t("not published")}</span></>}
    </>
  );
}

function UrlCell({ p }: { p: SitePage }) {
  if (p.kind === "route") return <a href={`${PAGES_PATH}/${p.id}`}>{p.url}</a>;
  if (p.kind === "record" && p.resource && resources.value[p.resource]) {
    const def = resources.value[p.resource];
    return <a href={`/admin/${p.resource}/${p.uuid}${def.can.edit ? "" : "?view=1"}`}>{p.url}</a>;
  }
  return <>{p.url}</>;
}

/** `sub`: a page's id or "new" (its route file editor); none: the list. */
export function PagesPage({ sub }: { sub?: string }) {
  if (!mayViewPages()) {
    return (
      <main class="page">
        <h1>{t("Site pages")}</h1>
        <p role="alert">{t("Your role may not see the site's route files and endpoints: that needs the permission view-.pages or manage-.pages. An administrator can grant it under Roles.")}</p>
        <p><a href="/admin">{t("Back to the start page")}</a></p>
      </main>
    );
  }
  if (sub) return <RouteFileEditor key={sub} id={sub === "new" ? null : sub} />;
  return <PageList />;
}

function PageList() {
  const params = location.value.params;
  const kindParam = params.get("kind");
  const kind = isKind(kindParam) ? kindParam : "";
  const resource = params.get("resource") ?? "";
  const search = params.get("search") ?? "";
  const page = Math.max(1, Number(params.get("page")) || 1);
  const rows = useSignal<SitePage[]>([]);
  const total = useSignal<number | null>(null);
  const error = useSignal("");
  const loading = useSignal(true);

  useEffect(() => {
    loading.value = true;
    listPages({ kind, resource, search, limit: PAGE, offset: (page - 1) * PAGE })
      .then((r) => { rows.value = r.pages; total.value = r.total; error.value = ""; })
      .catch((e: Error) => (error.value = e.message))
      .finally(() => (loading.value = false));
  }, [kind, resource, search, page]);

  const set = (key: string, value: string) => setParams((p) => { if (value) p.set(key, value); else p.delete(key); p.delete("page"); });
  const goPage = (n: number) => setParams((p) => (n > 1 ? p.set("page", String(n)) : p.delete("page")));
  const onSearch = (e: Event) => {
    e.preventDefault();
    set("search", (new FormData(e.currentTarget as HTMLFormElement).get("search") as string).trim());
  };
  const pages = total.value === null ? 1 : Math.max(1, Math.ceil(total.value / PAGE));
  const names = Object.values(resources.value).sort((a, b) => a.label.plural.localeCompare(b.label.plural));

  return (
    <main class="page site-pages" aria-busy={loading.value}>
      <div class="heading">
        <h1>{t("Site pages")}</h1>
        {total.value !== null && <span class="total" data-total={total.value}>{tn(total.value, "{n} page", "{n} pages")}</span>}
        {mayManagePages() && <div class="actions"><a class="button primary" href={`${PAGES_PATH}/new`}>{t("New route file")}</a></div>}
      </div>
      <div class="toolbar">
        <form role="search" onSubmit={onSearch}>
          <label class="sr-only" for="pages-search">{t("Search URLs and titles")}</label>
          <input id="pages-search" name="search" type="search" placeholder={t("Search URLs and titles")} defaultValue={search} key={search} maxLength={200} />
          <button type="submit">{t("Search")}</button>
        </form>
        <div class="filters">
          <label>{t("Kind")}
            <select value={kind} onChange={(e) => set("kind", (e.target as HTMLSelectElement).value)}>
              <option value="">{t("All kinds")}</option>
              {KINDS.map((k) => <option key={k} value={k}>{kindPlural(k)}</option>)}
            </select>
          </label>
          <label>{t("Resource")}
            <select value={resource} onChange={(e) => set("resource", (e.target as HTMLSelectElement).value)}>
              <option value="">{t("All resources")}</option>
              {names.map((r) => <option key={r.name} value={r.name}>{r.label.plural}</option>)}
              {resource && !resources.value[resource] && <option value={resource}>{resource}</option>}
            </select>
          </label>
        </div>
      </div>
      {error.value && <p class="error" role="alert">{error.value}</p>}
      <div class="table-wrap">
        <table class="pages-list">
          <caption class="sr-only">{t("The site's pages, by URL")}</caption>
          <thead><tr><th scope="col">{t("URL")}</th><th scope="col">{t("Kind")}</th><th scope="col">{t("About")}</th><th scope="col">{t("Modified")}</th></tr></thead>
          <tbody>
            {rows.value.map((p) => (
              <tr key={p.id} data-page={p.id} data-kind={p.kind}>
                <td class="page-url"><UrlCell p={p} /></td>
                <td data-label={t("Kind")}>{kindName(p.kind)}</td>
                <td data-label={t("About")}><About p={p} /></td>
                <td data-label={t("Modified")}>{p._modified ? when(p._modified * 1000) : "—"}</td>
              </tr>
            ))}
            {!loading.value && rows.value.length === 0 && <tr><td colSpan={4} class="muted">{t("No pages match.")}</td></tr>}
          </tbody>
        </table>
      </div>
      <nav class="pager" aria-label={t("Pages")}>
        <button type="button" disabled={page <= 1} onClick={() => goPage(page - 1)}>{t("Previous")}</button>
        <span>{t("Page {page} of {pages}", { page, pages })}</span>
        <button type="button" disabled={page >= pages} onClick={() => goPage(page + 1)}>{t("Next")}</button>
      </nav>
    </main>
  );
}

/**
 * The overview of one resource: columns, sort, search, filters and paging all go through the list
 * API and live in the URL; bulk actions, import/export, history and restore of deleted records.
 * The users overview also invites, resends invitations, shows who has two-factor sign-in and
 * resets it (users.ts).
 */
import { useEffect, useRef } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { api, ApiError, query, type Envelope } from "../api";
import { location, setParams } from "../router";
import { selectedFilters, filterParam, actionUrl } from "../filters";
import type { ResourceView } from "../state";
import { Cell, columnLabel } from "../components/Cell";
import { FilterBar } from "../components/FilterBar";
import { HistoryDialog } from "../components/HistoryDialog";
import { ImportDialog } from "../components/ImportDialog";
import { BulkBar } from "../components/BulkBar";
import { recordTitle, titleField, type Row } from "../rows";
import { RowMenu, type MenuItem } from "../components/RowMenu";
import { ColumnChooser } from "../components/ColumnChooser";
import { DeletedList } from "../components/DeletedList";
import { Icon } from "../components/Icon";
import { t } from "../i18n";
import { batched, live, type Live } from "../live";
import { InviteDialog } from "../components/InviteDialog";
import { userMenuItems, type Told } from "../users";

type ListAnswer = Envelope & Record<string, Record<string, Row>>;

const PAGE_SIZES = [10, 25, 50, 100];
/** While the realtime stream is not open, the list is asked whether it changed this often. */
const REFRESH_MS = 5000;
/** Changes told within this long of the first are one reload of the list. */
const LIVE_MS = 150;
const prefKey = (r: string, what: string) => `resd.admin.${r}.${what}`;

export function Overview({ def }: { def: ResourceView }) {
  const params = location.value.params;
  const search = params.get("search") ?? "";
  const sort = params.get("sort") ?? (def.sort ? `${def.sort.field}|${def.sort.order}` : "");
  const page = Math.max(1, Number(params.get("page")) || 1);
  const pageSize = useSignal(Number(localStorage.getItem(prefKey(def.name, "pageSize"))) || 25);
  const storedCols = localStorage.getItem(prefKey(def.name, "columns"));
  const columns = useSignal<string[]>(storedCols ? (JSON.parse(storedCols) as string[]).filter((c) => def.columns.includes(c) || c === "_created" || c === "_modified" || c in def.fields) : def.columns);
  const selection = selectedFilters(def.filters, params);
  const rows = useSignal<Row[]>([]);
  const total = useSignal<number | null>(null);
  const error = useSignal("");
  const loading = useSignal(true);
  const checked = useSignal<Set<string>>(new Set());
  const historyOf = useSignal<Row | null>(null);
  const notice = useSignal("");
  const importing = useSignal(false);
  const inviting = useSignal(false);
  const told = useSignal<Told | null>(null);
  const showDeleted = useSignal(false);
  const cursor = useSignal(-1);
  const lastModified = useRef<string | null>(null);
  const searchInput = useRef<HTMLInputElement>(null);
  /** The last load begun: an answer to an earlier one (another page, before a change) is dropped. */
  const loads = useRef(0);
  const stream = useRef<Live | null>(null);

  const listPath = `/${def.name}${query({ limit: pageSize.value, offset: (page - 1) * pageSize.value, sort: sort || "_created|desc", filter: filterParam(selection), search })}`;

  const load = async (conditional = false) => {
    const n = ++loads.current;
    try {
      const headers: Record<string, string> = conditional && lastModified.current ? { "if-modified-since": lastModified.current } : {};
      const r = await api<ListAnswer>("GET", listPath, undefined, headers);
      if (n !== loads.current || r.status === 304) return;
      lastModified.current = r.headers.get("last-modified");
      rows.value = Object.values(r.body[def.name] ?? {});
      total.value = r.body.total ?? rows.value.length;
      error.value = "";
      // Rows that left the page (deleted elsewhere) are no longer selected.
      if (checked.value.size) checked.value = new Set(rows.value.map((x) => x.uuid).filter((u) => checked.value.has(u)));
    } catch (e) {
      if (n === loads.current) error.value = (e as Error).message;
    } finally {
      if (n === loads.current) loading.value = false;
    }
  };
  const latestLoad = useRef(load);
  latestLoad.current = load;

  /**
   * Changes made elsewhere show up as they happen: any change to the resource loads the page of the
   * list again (its sort, filter, search and paging decide what it shows), at most once per LIVE_MS.
   * While the stream is not open the list is asked every REFRESH_MS whether it changed (a 304 costs
   * little).
   */
  useEffect(() => {
    let poll: ReturnType<typeof setInterval> | undefined;
    const setOpen = (open: boolean) => {
      clearInterval(poll);
      if (!open) poll = setInterval(() => { if (document.visibilityState === "visible") void latestLoad.current(true); }, REFRESH_MS);
    };
    const reload = batched(() => void latestLoad.current(), LIVE_MS);
    setOpen(false);
    stream.current = live([def.name], { change: reload, stale: reload, open: setOpen });
    return () => { stream.current?.close(); stream.current = null; reload.cancel(); clearInterval(poll); };
  }, [def.name]);

  useEffect(() => {
    loading.value = true;
    lastModified.current = null;
    checked.value = new Set();
    // The first page loads once the stream is open, so that no change falls between the two.
    let gone = false;
    void (stream.current?.ready ?? Promise.resolve()).then(() => { if (!gone) void latestLoad.current(); });
    return () => { gone = true; };
  }, [listPath]);

  // A page past the end (records deleted, a stale link) shows the last page instead of nothing.
  useEffect(() => {
    if (total.value !== null && page > 1 && (page - 1) * pageSize.value >= total.value) goPage(Math.max(1, Math.ceil(total.value / pageSize.value)));
  }, [total.value, page, pageSize.value]);

  useEffect(() => {
    /**
     * One tab stop per row (its title link); the arrow keys reach the rest: up and down move between
     * rows keeping the column, left and right between a row's checkbox, link and actions.
     */
    const onKey = (e: KeyboardEvent) => {
      const target = e.target as HTMLElement;
      const inRow = target.closest<HTMLElement>("tr[data-index]");
      const inField = target.closest("input:not([type=checkbox]), textarea, select, [contenteditable], [role=menu]");
      if (e.key === "/" && !inField && !(target instanceof HTMLInputElement)) {
        e.preventDefault();
        searchInput.current?.focus();
        return;
      }
      if (inField) return;
      const stops = (tr: Element | null) => [...(tr?.querySelectorAll<HTMLElement>("[data-stop]") ?? [])];
      if ((e.key === "ArrowDown" || e.key === "ArrowUp") && rows.value.length) {
        e.preventDefault();
        const col = inRow ? stops(inRow).indexOf(target) : -1;
        cursor.value = Math.max(0, Math.min(rows.value.length - 1, (inRow ? Number(inRow.dataset.index) : cursor.value) + (e.key === "ArrowDown" ? 1 : -1)));
        const next = document.querySelector(`tr[data-index="${cursor.value}"]`);
        const s = stops(next);
        (s[col >= 0 ? col : 1] ?? s[0])?.focus();
      } else if (inRow && (e.key === "ArrowLeft" || e.key === "ArrowRight")) {
        const s = stops(inRow);
        const i = s.indexOf(target);
        if (i < 0) return;
        e.preventDefault();
        s[Math.max(0, Math.min(s.length - 1, i + (e.key === "ArrowRight" ? 1 : -1)))]?.focus();
      }
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [def.name]);

  const sortBy = (col: string) => {
    const [field, order] = sort.split("|");
    const next = field === col && order !== "desc" ? `${col}|desc` : `${col}|asc`;
    setParams((p) => { p.set("sort", next); p.delete("page"); });
  };
  const goPage = (n: number) => setParams((p) => (n > 1 ? p.set("page", String(n)) : p.delete("page")));
  const onSearch = (e: Event) => {
    e.preventDefault();
    const v = (new FormData(e.currentTarget as HTMLFormElement).get("search") as string).trim();
    setParams((p) => { if (v) p.set("search", v); else p.delete("search"); p.delete("page"); });
  };
  const remove = async (row: Row) => {
    const name = recordTitle(def, row);
    if (!confirm(name ? t("Delete “{title}”? It can be restored from its history for 90 days.", { title: name }) : t("Delete this record? It can be restored from its history for 90 days."))) return;
    try {
      await api("DELETE", `/${def.name}/${row.uuid}`);
      notice.value = name ? t("Deleted “{title}”.", { title: name }) : t("Deleted one record.");
      await load();
    } catch (e) {
      alert((e as ApiError).message);
    }
  };
  const setPageSize = (n: number) => {
    pageSize.value = n;
    localStorage.setItem(prefKey(def.name, "pageSize"), String(n));
    goPage(1);
  };
  const setColumns = (cols: string[]) => {
    columns.value = cols;
    localStorage.setItem(prefKey(def.name, "columns"), JSON.stringify(cols));
  };

  const pages = total.value === null ? 1 : Math.max(1, Math.ceil(total.value / pageSize.value));
  const [sortField, sortOrder] = sort.split("|");
  const allChecked = rows.value.length > 0 && rows.value.every((r) => checked.value.has(r.uuid));
  const toggle = (uuid: string) => {
    const s = new Set(checked.value);
    if (s.has(uuid)) s.delete(uuid);
    else s.add(uuid);
    checked.value = s;
  };
  // The title column carries the row's link; without one the actions cell does.
  const tf = titleField(def);
  const linkColumn = tf && columns.value.includes(tf) ? tf : columns.value.find((c) => def.fields[c] && !def.fields[c].multi && def.fields[c].type !== "image") ?? null;
  const exportHref = `/api/v1/${def.name}/export?format=csv`;
  // Users: whether each has two-factor sign-in (`two_factor`, kept by the server, no field of the definition).
  const isUsers = def.name === "users";
  const twoFactorColumn = isUsers && !columns.value.includes("two_factor");
  const tell = (x: Told) => {
    told.value = x;
    if (x.ok) void load();
  };

  return (
    <main class="page overview" aria-busy={loading.value}>
      <div class="heading">
        <h1>{def.label.plural}</h1>
        {total.value !== null && <span class="total" data-total={total.value}>{total.value} {total.value === 1 ? def.label.singular.toLowerCase() : def.label.plural.toLowerCase()}</span>}
        <div class="actions">
          {def.can.create && <a class="button primary" href={`/admin/${def.name}/new`}>{t("New {name}", { name: def.label.singular.toLowerCase(), Name: def.label.singular })}</a>}
          {isUsers && def.can.create && <button type="button" onClick={() => (inviting.value = true)}>{t("Invite")}</button>}
          {def.can.import && <button type="button" onClick={() => (importing.value = true)}>{t("Import")}</button>}
          {def.can.export && <a class="button" href={exportHref} download>{t("Export CSV")}</a>}
          {def.history && <button type="button" aria-pressed={showDeleted.value} onClick={() => (showDeleted.value = !showDeleted.value)}>{t("Deleted")}</button>}
          <ColumnChooser def={def} columns={columns.value} onChange={setColumns} />
        </div>
      </div>
      <div class="toolbar">
        <form role="search" onSubmit={onSearch}>
          <label class="sr-only" for="search">{t("Search")}</label>
          <input id="search" ref={searchInput} name="search" type="search" placeholder={`${t("Search")}  ( / )`} defaultValue={search} key={search} maxLength={200} />
          <button type="submit">{t("Search")}</button>
        </form>
        <FilterBar def={def} selection={selection} />
      </div>
      {showDeleted.value && <DeletedList def={def} onRestored={() => void load()} />}
      <BulkBar def={def} rows={rows.value} uuids={[...checked.value]} onDone={async () => { checked.value = new Set(); await load(); }} />
      {notice.value && <p class="ok notice" role="status">{notice.value}</p>}
      {told.value && <p class={`${told.value.ok ? "ok" : "error"} notice`} role={told.value.ok ? "status" : "alert"}>{told.value.text}</p>}
      {error.value && <p class="error" role="alert">{error.value}</p>}
      <div class="table-wrap">
        <table class="records">
          <caption class="sr-only">{t("{name}: the arrow keys move between rows, and to each row's checkbox and actions.", { name: def.label.plural })}</caption>
          <thead>
            <tr>
              <th class="check"><input type="checkbox" aria-label={t("Select all rows on this page")} checked={allChecked} onChange={() => (checked.value = allChecked ? new Set() : new Set(rows.value.map((r) => r.uuid)))} /></th>
              {columns.value.map((c) => (
                <th key={c} aria-sort={sortField === c ? (sortOrder === "desc" ? "descending" : "ascending") : undefined}>
                  <button type="button" class="sort" onClick={() => sortBy(c)}>{columnLabel(c, def.fields[c])}{sortField === c && <Icon name={sortOrder === "desc" ? "down" : "up"} size={14} />}</button>
                </th>
              ))}
              {twoFactorColumn && <th>{t("Two-factor")}</th>}
              <th><span class="sr-only">{t("Actions")}</span></th>
            </tr>
          </thead>
          <tbody>
            {rows.value.map((r, i) => {
              const name = recordTitle(def, r);
              const open = `/admin/${def.name}/${r.uuid}${def.can.edit ? "" : "?view=1"}`;
              const items: MenuItem[] = [
                ...(def.can.edit ? [{ label: t("Edit"), href: `/admin/${def.name}/${r.uuid}` }] : []),
                { label: t("View"), href: actionUrl(def.actions.view_url, r) },
                ...(def.actions.url ? [{ label: t("View on site"), href: actionUrl(def.actions.url, r), external: true }] : []),
                ...(def.history ? [{ label: t("History"), onSelect: () => (historyOf.value = r) }] : []),
                ...(isUsers ? userMenuItems(r, def.can.edit, tell) : []),
                ...(def.can.delete ? [{ label: t("Delete"), danger: true, onSelect: () => void remove(r) }] : []),
              ];
              let keys = 0;
              return (
                <tr key={r.uuid} data-uuid={r.uuid} data-index={i} class={cursor.value === i ? "cursor" : undefined}>
                  <td class="check"><input type="checkbox" data-stop tabIndex={-1} aria-label={t("Select {title}", { title: name || t("row {n}", { n: i + 1 }) })} checked={checked.value.has(r.uuid)} onChange={() => toggle(r.uuid)} /></td>
                  {columns.value.map((c) => {
                    const isTitle = c === linkColumn;
                    const kind = isTitle ? "title-cell" : keys++ < 2 ? "key-cell" : "extra-cell";
                    return (
                      <td key={c} data-col={c} class={kind} data-label={columnLabel(c, def.fields[c])}>
                        {isTitle
                          ? <a href={open} data-stop onFocus={() => (cursor.value = i)}>{name || <Cell name={c} field={def.fields[c]} value={r[c]} languages={def.languages} />}{!name && <span class="sr-only">{t("Open")}</span>}</a>
                          : <Cell name={c} field={def.fields[c]} value={r[c]} languages={def.languages} />}
                      </td>
                    );
                  })}
                  {twoFactorColumn && (
                    <td data-col="two_factor" class="extra-cell" data-label={t("Two-factor")}>
                      {r.two_factor === true ? <span aria-label={t("yes")}>✓</span> : <span class="muted" aria-label={t("no")}>✗</span>}
                    </td>
                  )}
                  <td class="row-actions">
                    {!linkColumn && <a href={open} data-stop onFocus={() => (cursor.value = i)}>{t("Open")}</a>}
                    <RowMenu label={t("Actions for {title}", { title: name || t("row {n}", { n: i + 1 }) })} items={items} tabIndex={-1} />
                  </td>
                </tr>
              );
            })}
            {!loading.value && rows.value.length === 0 && <tr><td colSpan={columns.value.length + (twoFactorColumn ? 3 : 2)} class="muted">{t("No records match.")}</td></tr>}
          </tbody>
        </table>
      </div>
      <nav class="pager" aria-label={t("Pages")}>
        <button type="button" disabled={page <= 1} onClick={() => goPage(page - 1)}>{t("Previous")}</button>
        <form class="inline" onSubmit={(e) => { e.preventDefault(); const n = Number(new FormData(e.currentTarget as HTMLFormElement).get("page")); if (Number.isInteger(n)) goPage(Math.max(1, Math.min(pages, n))); }}>
          <label>{t("Page")} <input name="page" type="number" min={1} max={pages} defaultValue={String(page)} key={page} class="page-number" /></label>
          <span>{t("of {pages}", { pages })}</span>
          <button type="submit">{t("Go")}</button>
        </form>
        <button type="button" disabled={page >= pages} onClick={() => goPage(page + 1)}>{t("Next")}</button>
        <label>{t("Per page")} <select value={pageSize.value} onChange={(e) => setPageSize(Number((e.target as HTMLSelectElement).value))}>{PAGE_SIZES.map((n) => <option key={n} value={n}>{n}</option>)}</select></label>
      </nav>
      {historyOf.value && <HistoryDialog def={def} uuid={historyOf.value.uuid} title={recordTitle(def, historyOf.value)} onClose={(done) => { historyOf.value = null; if (done) { notice.value = done; void load(); } }} />}
      {importing.value && <ImportDialog def={def} onImported={() => void load()} onClose={() => (importing.value = false)} />}
      {inviting.value && <InviteDialog onClose={() => (inviting.value = false)} onInvited={(email) => { inviting.value = false; tell({ ok: true, text: t("Invited {email}: a mail with a link to choose a password is on its way.", { email }) }); }} />}
    </main>
  );
}

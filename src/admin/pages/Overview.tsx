/**
 * The overview of one resource: columns, sort, search, filters and paging all go through the list
 * API and live in the URL; bulk actions, import/export, history and restore of deleted records.
 */
import { useEffect, useRef } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { api, ApiError, query, type Envelope } from "../api";
import { location, navigate, setParams } from "../router";
import { selectedFilters, filterParam, actionUrl } from "../filters";
import type { ResourceView } from "../state";
import { Cell, columnLabel } from "../components/Cell";
import { FilterBar } from "../components/FilterBar";
import { HistoryDialog } from "../components/HistoryDialog";
import { ImportDialog } from "../components/ImportDialog";
import { BulkBar } from "../components/BulkBar";
import type { Row } from "../rows";
import { ColumnChooser } from "../components/ColumnChooser";
import { DeletedList } from "../components/DeletedList";

type ListAnswer = Envelope & Record<string, Record<string, Row>>;

const PAGE_SIZES = [10, 25, 50, 100];
const REFRESH_MS = 5000;
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
  const historyOf = useSignal<string | null>(null);
  const importing = useSignal(false);
  const showDeleted = useSignal(false);
  const cursor = useSignal(-1);
  const lastModified = useRef<string | null>(null);
  const searchInput = useRef<HTMLInputElement>(null);

  const listPath = `/${def.name}${query({ limit: pageSize.value, offset: (page - 1) * pageSize.value, sort: sort || "_created|desc", filter: filterParam(selection), search })}`;

  const load = async (conditional = false) => {
    try {
      const headers: Record<string, string> = conditional && lastModified.current ? { "if-modified-since": lastModified.current } : {};
      const r = await api<ListAnswer>("GET", listPath, undefined, headers);
      if (r.status === 304) return;
      lastModified.current = r.headers.get("last-modified");
      rows.value = Object.values(r.body[def.name] ?? {});
      total.value = r.body.total ?? rows.value.length;
      error.value = "";
    } catch (e) {
      error.value = (e as Error).message;
    } finally {
      loading.value = false;
    }
  };

  useEffect(() => {
    loading.value = true;
    lastModified.current = null;
    checked.value = new Set();
    void load();
    // Changes by others show up: a conditional request answered 304 costs next to nothing.
    const t = setInterval(() => { if (document.visibilityState === "visible") void load(true); }, REFRESH_MS);
    return () => clearInterval(t);
  }, [listPath]);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const inField = (e.target as HTMLElement).closest("input, textarea, select, [contenteditable]");
      if (e.key === "/" && !inField) {
        e.preventDefault();
        searchInput.current?.focus();
      } else if (!inField && (e.key === "ArrowDown" || e.key === "ArrowUp") && rows.value.length) {
        e.preventDefault();
        cursor.value = Math.max(0, Math.min(rows.value.length - 1, cursor.value + (e.key === "ArrowDown" ? 1 : -1)));
        document.querySelector<HTMLElement>(`tr[data-index="${cursor.value}"]`)?.focus();
      } else if (!inField && e.key === "Enter" && cursor.value >= 0 && rows.value[cursor.value]) {
        navigate(`/admin/${def.name}/${rows.value[cursor.value].uuid}${def.can.edit ? "" : "?view=1"}`);
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
    if (!confirm(`Delete this ${def.label.singular.toLowerCase()}? It can be restored from its history for 90 days.`)) return;
    try {
      await api("DELETE", `/${def.name}/${row.uuid}`);
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
  const exportHref = `/api/v1/${def.name}/export?format=csv`;

  return (
    <main class="page overview" aria-busy={loading.value}>
      <div class="heading">
        <h1>{def.label.plural}</h1>
        {total.value !== null && <span class="total" data-total={total.value}>{total.value} {total.value === 1 ? def.label.singular.toLowerCase() : def.label.plural.toLowerCase()}</span>}
        <div class="actions">
          {def.can.create && <a class="button primary" href={`/admin/${def.name}/new`}>New {def.label.singular.toLowerCase()}</a>}
          {def.can.import && <button type="button" onClick={() => (importing.value = true)}>Import</button>}
          {def.can.export && <a class="button" href={exportHref} download>Export CSV</a>}
          {def.history && <button type="button" aria-pressed={showDeleted.value} onClick={() => (showDeleted.value = !showDeleted.value)}>Deleted</button>}
          <ColumnChooser def={def} columns={columns.value} onChange={setColumns} />
        </div>
      </div>
      <div class="toolbar">
        <form role="search" onSubmit={onSearch}>
          <label class="sr-only" for="search">Search</label>
          <input id="search" ref={searchInput} name="search" type="search" placeholder="Search  ( / )" defaultValue={search} key={search} maxLength={200} />
          <button type="submit">Search</button>
        </form>
        <FilterBar def={def} selection={selection} />
      </div>
      {showDeleted.value && <DeletedList def={def} onRestored={() => void load()} />}
      {checked.value.size > 0 && <BulkBar def={def} rows={rows.value} uuids={[...checked.value]} onDone={() => { checked.value = new Set(); void load(); }} />}
      {error.value && <p class="error" role="alert">{error.value}</p>}
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th class="check"><input type="checkbox" aria-label="Select all rows on this page" checked={allChecked} onChange={() => (checked.value = allChecked ? new Set() : new Set(rows.value.map((r) => r.uuid)))} /></th>
              {columns.value.map((c) => (
                <th key={c} aria-sort={sortField === c ? (sortOrder === "desc" ? "descending" : "ascending") : undefined}>
                  <button type="button" class="sort" onClick={() => sortBy(c)}>{columnLabel(c, def.fields[c])}{sortField === c ? (sortOrder === "desc" ? " ▼" : " ▲") : ""}</button>
                </th>
              ))}
              <th><span class="sr-only">Actions</span></th>
            </tr>
          </thead>
          <tbody>
            {rows.value.map((r, i) => (
              <tr key={r.uuid} data-uuid={r.uuid} data-index={i} tabIndex={-1} class={cursor.value === i ? "cursor" : undefined}>
                <td class="check"><input type="checkbox" aria-label="Select row" checked={checked.value.has(r.uuid)} onChange={() => toggle(r.uuid)} /></td>
                {columns.value.map((c) => <td key={c} data-col={c}><Cell name={c} field={def.fields[c]} value={r[c]} languages={def.languages} /></td>)}
                <td class="row-actions">
                  {def.can.edit && <a href={`/admin/${def.name}/${r.uuid}`}>Edit</a>}
                  <a href={actionUrl(def.actions.view_url, r)}>View</a>
                  {def.actions.url && <a href={actionUrl(def.actions.url, r)} target="_blank" rel="noopener">View on site</a>}
                  {def.history && <button type="button" class="link" onClick={() => (historyOf.value = r.uuid)}>History</button>}
                  {def.can.delete && <button type="button" class="link danger" onClick={() => remove(r)}>Delete</button>}
                </td>
              </tr>
            ))}
            {!loading.value && rows.value.length === 0 && <tr><td colSpan={columns.value.length + 2} class="muted">No records match.</td></tr>}
          </tbody>
        </table>
      </div>
      <nav class="pager" aria-label="Pages">
        <button type="button" disabled={page <= 1} onClick={() => goPage(page - 1)}>Previous</button>
        <span>Page {page} of {pages}</span>
        <button type="button" disabled={page >= pages} onClick={() => goPage(page + 1)}>Next</button>
        <label>Per page <select value={pageSize.value} onChange={(e) => setPageSize(Number((e.target as HTMLSelectElement).value))}>{PAGE_SIZES.map((n) => <option key={n} value={n}>{n}</option>)}</select></label>
      </nav>
      {historyOf.value && <HistoryDialog def={def} uuid={historyOf.value} onClose={(changed) => { historyOf.value = null; if (changed) void load(); }} />}
      {importing.value && <ImportDialog def={def} onClose={(changed) => { importing.value = false; if (changed) void load(); }} />}
    </main>
  );
}

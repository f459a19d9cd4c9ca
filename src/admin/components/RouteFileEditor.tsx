/**
 * One page of the Pages screen (`/admin/-/pages/{id}`, `/admin/-/pages/new`): a route file's text
 * in a plain text area — created, saved, deleted and rolled back through `/api/v1/.pages` by those
 * who may (manage-.pages), read by those who may view — or what an endpoint or a record page is.
 * The server's refusals (409 the URL has a file, 404 it is gone, 422 a text it will not serve) are
 * shown with its words.
 */
import { useEffect, useRef } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { api, ApiError, type Envelope } from "../api";
import { navigate, setLeaveGuard } from "../router";
import { kindName, mayManagePages, PAGES_PATH, resourceLabel, type SitePage } from "./site-pages";
import { Dialog } from "./Dialog";
import { t, when } from "../i18n";

type Entry = { id: number; action: string; at: number; user: string | null; record: { url: string; text: string } };
type Author = { name: string | null; email?: string };
type History = { entries: Entry[]; users: Record<string, Author> };
type Problem = { status: number; text: string };
type PagesAnswer = Envelope & { pages: Record<string, SitePage> };

const ACTIONS: Record<string, () => string> = { create: () => t("Created"), update: () => t("Changed"), delete: () => t("Deleted"), restore: () => t("Restored") };
const LEAVE = () => t("This form has unsaved changes. Leave without saving?");

const first = (b: PagesAnswer) => Object.values(b.pages)[0];

function problemOf(e: unknown): Problem {
  if (!(e instanceof ApiError)) return { status: 0, text: (e as Error).message };
  const words = e.body.errors?.text ?? e.body.errors?.url ?? e.body.details ?? e.message;
  const lead = e.status === 409 ? t("That URL has a route file already.")
    : e.status === 404 ? t("This route file is not there (deleted or moved in the meantime).")
    : e.status === 403 ? t("Your role may not change route files (that needs manage-.pages).")
    : t("Not saved:");
  return { status: e.status, text: `${lead} ${words}` };
}

async function loadHistory(id: string): Promise<History> {
  const r = await api<Envelope & { history: Entry[]; users?: Record<string, Author> }>("GET", `/.pages/${id}/history`);
  return { entries: r.body.history, users: r.body.users ?? {} };
}

function RouteHistory({ id, url, canRestore, onClose }: { id: string; url: string; canRestore: boolean; onClose: (done: string | null) => void }) {
  const h = useSignal<History | null>(null);
  const error = useSignal("");
  useEffect(() => { loadHistory(id).then((x) => (h.value = x)).catch((e: Error) => (error.value = e.message)); }, [id]);
  const who = (e: Entry) => {
    if (!e.user) return t("someone outside resd (by hand or by git)");
    const a = h.value?.users[e.user];
    return a ? (a.name && a.email ? `${a.name} (${a.email})` : a.name ?? a.email ?? t("a user")) : t("a former user");
  };
  const rollBack = async (e: Entry) => {
    try {
      await api("POST", `/.pages/${id}/restore`, { entry: e.id });
      onClose(t("Rolled back to the version of {when}.", { when: when(e.at) }));
    } catch (err) {
      error.value = problemOf(err).text;
    }
  };
  const list = h.value?.entries ?? [];
  return (
    <Dialog title={t("History of “{title}”", { title: url })} onClose={() => onClose(null)}>
      {error.value && <p class="error" role="alert">{error.value}</p>}
      {!h.value && !error.value && <p role="status">{t("Loading…")}</p>}
      <ol class="history route-history">
        {[...list].reverse().map((e) => {
          const last = e === list.at(-1);
          return (
            <li key={e.id} data-entry={e.id}>
              <p><strong>{ACTIONS[e.action]?.() ?? e.action}</strong> <time dateTime={new Date(e.at).toISOString()}>{when(e.at)}</time> {t("by {who}", { who: who(e) })}</p>
              <details><summary>{t("Text of this version")}</summary><pre class="route-text-version">{e.record.text}</pre></details>
              {canRestore && e.action !== "delete" && !last && <button type="button" onClick={() => void rollBack(e)}>{t("Roll back to this version")}</button>}
            </li>
          );
        })}
      </ol>
    </Dialog>
  );
}

export function RouteFileEditor({ id }: { id: string | null }) {
  const page = useSignal<SitePage | null>(null);
  const url = useSignal("");
  const text = useSignal("");
  const saved = useRef("");
  const problem = useSignal<Problem | null>(null);
  const notice = useSignal("");
  const missing = useSignal(false);
  /** The last history entry of a route file that was deleted (it can be restored). */
  const deleted = useSignal<Entry | null>(null);
  const busy = useSignal(false);
  const showHistory = useSignal(false);
  const manage = mayManagePages();
  const isNew = id === null;
  const dirty = () => manage && (isNew ? text.value !== "" || url.value !== "" : page.value?.kind === "route" && text.value !== saved.current);

  const load = async () => {
    if (id === null) return;
    try {
      const p = first((await api<PagesAnswer>("GET", `/.pages/${id}`)).body);
      page.value = p;
      text.value = saved.current = p.text ?? "";
      missing.value = false;
      deleted.value = null;
    } catch (e) {
      if (!(e instanceof ApiError) || e.status !== 404) { problem.value = problemOf(e); return; }
      page.value = null;
      missing.value = true;
      // A route file deleted through the API keeps its history: offer it back.
      const last = await loadHistory(id).then((h) => h.entries.at(-1) ?? null, () => null);
      deleted.value = last?.action === "delete" ? last : null;
    }
  };
  useEffect(() => { void load(); }, [id]);

  useEffect(() => {
    const onUnload = (e: BeforeUnloadEvent) => { if (dirty()) e.preventDefault(); };
    window.addEventListener("beforeunload", onUnload);
    setLeaveGuard(() => !dirty() || window.confirm(LEAVE()));
    return () => { window.removeEventListener("beforeunload", onUnload); setLeaveGuard(null); };
  }, [id]);

  const run = async (work: () => Promise<void>) => {
    busy.value = true;
    problem.value = null;
    notice.value = "";
    try {
      await work();
    } catch (e) {
      problem.value = problemOf(e);
    } finally {
      busy.value = false;
    }
  };
  const save = () => run(async () => {
    if (isNew) {
      const p = first((await api<PagesAnswer>("POST", "/.pages", { url: url.value.trim(), text: text.value })).body);
      url.value = text.value = "";
      navigate(`${PAGES_PATH}/${p.id}`);
      return;
    }
    const p = first((await api<PagesAnswer>("PUT", `/.pages/${id}`, { text: text.value })).body);
    page.value = { ...p, text: text.value };
    saved.current = text.value;
    notice.value = t("Saved.");
  });
  const remove = () => {
    if (!page.value || !window.confirm(t("Delete the route file of {url}? Its history keeps the text, and it can be restored.", { url: page.value.url }))) return;
    void run(async () => {
      await api("DELETE", `/.pages/${id}`);
      saved.current = text.value;
      await load();
      notice.value = t("Deleted.");
    });
  };
  const restore = () => run(async () => {
    await api("POST", `/.pages/${id}/restore`, {});
    await load();
    notice.value = t("Restored.");
  });
  const onKeyDown = (e: KeyboardEvent) => {
    if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === "s") { e.preventDefault(); if (manage && !busy.value) void save(); }
  };

  const p = page.value;
  const back = <p><a href={PAGES_PATH}>{t("All pages of the site")}</a></p>;
  const messages = (
    <>
      {problem.value && <p class="error" role="alert" data-status={problem.value.status}>{problem.value.text}</p>}
      <p class="ok notice" role="status">{notice.value}</p>
    </>
  );

  if (!isNew && !p) {
    return (
      <main class="page route-file">
        {back}
        <h1>{missing.value ? t("No route file here") : t("Loading…")}</h1>
        {messages}
        {missing.value && !deleted.value && <p>{t("There is no page with this id you may see.")}</p>}
        {deleted.value && (
          <>
            <p>{t("The route file of {url} was deleted {when}.", { url: deleted.value.record.url, when: when(deleted.value.at) })}</p>
            {manage && <button type="button" class="primary" disabled={busy.value} onClick={() => void restore()}>{t("Restore")}</button>}
          </>
        )}
      </main>
    );
  }
  if (p && p.kind !== "route") {
    return (
      <main class="page route-file">
        {back}
        <h1>{p.url}</h1>
        <p>{kindName(p.kind)}{p.kind === "endpoint" ? `: ${(p.methods ?? []).join(", ")} (${p.file})` : `: ${p.title ?? ""} (${resourceLabel(p.resource)})`}</p>
        {p.kind === "record" && p.resource && <p><a href={`/admin/${p.resource}/${p.uuid}`}>{t("Open the record")}</a></p>}
      </main>
    );
  }

  const ro = !manage;
  return (
    <main class="page route-file">
      {back}
      <h1>{isNew ? t("New route file") : t("Route file {url}", { url: p!.url })}</h1>
      {!isNew && <p class="muted"><code>{p!.file}</code>{p!.allows?.length ? <> · {t("Opens:")} {p!.allows.map((a, i) => <span key={i} class="chip">{a.operation} {a.resource}</span>)}</> : null}</p>}
      <form class="route-form" onSubmit={(e) => { e.preventDefault(); void save(); }} onKeyDown={onKeyDown}>
        {isNew && (
          <div class="field">
            <label for="route-url">{t("URL path")}</label>
            <input id="route-url" type="text" required spellcheck={false} autocomplete="off" placeholder="/api/v1/messages" value={url.value} aria-describedby="route-url-hint"
              onInput={(e) => (url.value = (e.target as HTMLInputElement).value)} />
            <p class="muted" id="route-url-hint">{t("The file is kept as ext/uri/<path>/index.tpl. An allow tag such as [#api-allow post messages#] in the file of /api/v1/messages lets every visitor do that.")}</p>
          </div>
        )}
        <div class="field">
          <label for="route-text">{t("Text of the route file")}</label>
          <textarea id="route-text" class="route-text" rows={18} spellcheck={false} readOnly={ro} value={text.value} aria-invalid={problem.value?.status === 422 || undefined}
            onInput={(e) => (text.value = (e.target as HTMLTextAreaElement).value)} />
        </div>
        {messages}
        <div class="route-actions">
          {manage && <button type="submit" class="primary" disabled={busy.value}>{busy.value ? t("Saving…") : isNew ? t("Create") : t("Save")}</button>}
          {!isNew && <button type="button" onClick={() => (showHistory.value = true)}>{t("History")}</button>}
          {manage && !isNew && <button type="button" class="danger" disabled={busy.value} onClick={remove}>{t("Delete")}</button>}
        </div>
      </form>
      {showHistory.value && !isNew && (
        <RouteHistory id={id} url={p!.url} canRestore={manage} onClose={(done) => { showHistory.value = false; if (done) { void load().then(() => (notice.value = done)); } }} />
      )}
    </main>
  );
}

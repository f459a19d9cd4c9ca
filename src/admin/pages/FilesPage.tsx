/**
 * The media library: drop or choose several files (progress each while they upload; a finished
 * one's row leaves after a moment, a refused one stays with its reason until dismissed), sorted
 * and filtered by kind through the list API (both kept in the URL), a grid with thumbnails, title
 * and (for images) alt text edited in place, delete, where a file is used, and the unused ones.
 */
import { useEffect } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { api, ApiError, type Envelope } from "../api";
import { location, setParams } from "../router";
import { may } from "../state";
import {
  formatSize, isImage, isKind, isSortName, kindIcon, kindOf, KINDS, listFiles, SORTS, sortFiles, thumb, uploadFile, type FileMeta,
  type SortName,
} from "../media";
import { Dialog } from "../components/Dialog";
import { Icon } from "../components/Icon";
import { t, tn } from "../i18n";

const PAGE = 60;
/** How long a finished upload's row stays, long enough to be seen, short enough not to pile up. */
const DONE_SHOWN_MS = 3000;
type Usage = { resource: string; uuid: string; fields: string[] };
type Upload = { id: number; name: string; progress: number; done?: boolean; error?: string };
let uploadIds = 0;

export function FilesPage() {
  const params = location.value.params;
  const page = Math.max(1, Number(params.get("page")) || 1);
  const onlyUnused = params.get("unused") === "1";
  const sortParam = params.get("sort");
  const sort: SortName = isSortName(sortParam) ? sortParam : "newest";
  const kindParam = params.get("kind");
  const kind = isKind(kindParam) ? kindParam : undefined;
  const files = useSignal<FileMeta[]>([]);
  const total = useSignal(0);
  const error = useSignal("");
  const status = useSignal("");
  const uploads = useSignal<Upload[]>([]);
  const over = useSignal(false);
  const usageOf = useSignal<{ file: FileMeta; usage: Usage[] | null } | null>(null);
  const canUpload = may("create-.files") || may("manage-.files");
  const canEdit = may("edit-.files") || may("manage-.files");
  const canDelete = may("delete-.files") || may("manage-.files");

  const load = async () => {
    try {
      if (onlyUnused) {
        const r = await api<Envelope & { files: Record<string, FileMeta> }>("GET", "/.files-unused");
        files.value = sortFiles(Object.values(r.body.files).filter((f) => !kind || kindOf(f.type) === kind), sort);
        total.value = files.value.length;
      } else {
        const r = await listFiles({ offset: (page - 1) * PAGE, limit: PAGE, sort, kind });
        files.value = r.files;
        total.value = r.total;
      }
      error.value = "";
    } catch (e) {
      error.value = (e as Error).message;
    }
  };
  useEffect(() => { void load(); }, [page, onlyUnused, sort, kind]);

  const upload = async (list: FileList | File[]) => {
    const chosen = Array.from(list).map((file) => ({ file, row: { id: ++uploadIds, name: file.name, progress: 0 } as Upload }));
    // Rows still showing a refusal stay until dismissed; finished ones make room.
    uploads.value = [...uploads.value.filter((u) => u.error), ...chosen.map((c) => c.row)];
    await Promise.all(chosen.map(async ({ file, row }) => {
      const set = (u: Partial<Upload>) => (uploads.value = uploads.value.map((x) => (x.id === row.id ? { ...x, ...u } : x)));
      try {
        await uploadFile(file, (p) => set({ progress: p }));
        set({ progress: 1, done: true });
      } catch (e) {
        set({ error: (e as Error).message });
      }
    }));
    await load();
    const finished = new Set(chosen.map((c) => c.row.id));
    setTimeout(() => (uploads.value = uploads.value.filter((u) => !(u.done && finished.has(u.id)))), DONE_SHOWN_MS);
  };
  const dismiss = (id: number) => (uploads.value = uploads.value.filter((u) => u.id !== id));

  /** Saves one of the editable texts; the card is updated in place, so the grid keeps its order while one edits. */
  const save = async (f: FileMeta, key: "title" | "alt", value: string) => {
    if (value === (f[key] ?? "")) return;

    try {
      const r = await api<Envelope & { files: Record<string, FileMeta> }>("PUT", `/.files/${f.uuid}`, { [key]: value });
      const updated = r.body.files[f.uuid];
      if (updated) files.value = files.value.map((x) => (x.uuid === f.uuid ? updated : x));
      status.value = key === "alt" ? t("Saved the alt text of {file}.", { file: f.name }) : t("Saved the title of {file}.", { file: f.name });
      error.value = "";
    } catch (e) {
      const why = e instanceof ApiError ? e.body.errors?.[key] : undefined;
      error.value = why ? (key === "alt" ? t("The alt text of {file}: {why}.", { file: f.name, why }) : t("The title of {file}: {why}.", { file: f.name, why })) : (e as Error).message;
    }
  };
  const remove = async (f: FileMeta) => {
    if (!confirm(t("Delete {file}? Records that use it will show it as missing.", { file: f.title || f.name }))) return;
    try {
      await api("DELETE", `/.files/${f.uuid}`);
      await load();
    } catch (e) {
      error.value = (e as ApiError).message;
    }
  };
  const showUsage = async (f: FileMeta) => {
    usageOf.value = { file: f, usage: null };
    const r = await api<Envelope & { usage: Usage[] }>("GET", `/.files-usage?uuid=${f.uuid}`).catch((e: Error) => { error.value = e.message; return null; });
    if (r) usageOf.value = { file: f, usage: r.body.usage };
  };
  /** Sort, kind and "only unused" start again at the first page. */
  const choose = (key: string, value: string | null) => setParams((p) => {
    if (value) p.set(key, value);
    else p.delete(key);
    p.delete("page");
  });

  return (
    <main class="page files">
      <div class="heading">
        <h1>{t("Media library")}</h1>
        <span class="total">{tn(total.value, "{n} file", "{n} files")}</span>
      </div>
      <div class="library-tools">
        <label>{t("Sort")} <select value={sort} onChange={(e) => choose("sort", (e.target as HTMLSelectElement).value === "newest" ? null : (e.target as HTMLSelectElement).value)}>
          {Object.entries(SORTS).map(([value, s]) => <option key={value} value={value}>{s.label()}</option>)}
        </select></label>
        <label>{t("Type")} <select value={kind ?? ""} onChange={(e) => choose("kind", (e.target as HTMLSelectElement).value || null)}>
          <option value="">{t("All types")}</option>
          {KINDS.map((k) => <option key={k.value} value={k.value}>{k.label()}</option>)}
        </select></label>
        <label class="check"><input type="checkbox" checked={onlyUnused} onChange={() => choose("unused", onlyUnused ? null : "1")} /> {t("Only unused")}</label>
      </div>
      {canUpload && (
        <div class={`dropzone${over.value ? " over" : ""}`} data-dropzone
          onDragOver={(e) => { e.preventDefault(); over.value = true; }} onDragLeave={() => (over.value = false)}
          onDrop={(e) => { e.preventDefault(); over.value = false; if (e.dataTransfer?.files.length) void upload(e.dataTransfer.files); }}>
          <p>{t("Drop files here, or")} <label class="button"><Icon name="upload" /> {t("choose files")}<input type="file" multiple class="sr-only" onChange={(e) => upload((e.target as HTMLInputElement).files ?? [])} /></label></p>
          {uploads.value.length > 0 && (
            <ul class="uploads">
              {uploads.value.map((u) => (
                <li key={u.id} data-upload={u.name} class={u.error ? "failed" : u.done ? "done" : undefined}>
                  <span class="upload-name">{u.name}</span>
                  {u.error ? (
                    <>
                      <span class="error" role="alert">{u.error}</span>
                      <button type="button" class="link" onClick={() => dismiss(u.id)}>{t("Dismiss")}</button>
                    </>
                  ) : (
                    <>
                      <progress max={1} value={u.progress} aria-label={t("Upload of {file}", { file: u.name })} />
                      {u.done && <span class="ok"><Icon name="check" /> done</span>}
                    </>
                  )}
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
      {error.value && <p class="error" role="alert">{error.value}</p>}
      <p class="sr-only" role="status">{status.value}</p>
      <ul class="library">
        {files.value.map((f) => (
          <li key={f.uuid} data-file={f.uuid}>
            <div class="preview">
              {isImage(f.type) ? <img src={thumb(f.uuid)} alt={f.alt ?? ""} loading="lazy" /> : <Icon name={kindIcon(f.type)} size={40} />}
            </div>
            <a class="file-name" id={`name-${f.uuid}`} href={`/download/${f.uuid}`}>{f.name}</a>
            <span class="file-size muted">{formatSize(f.size)}{f.width && f.height ? ` · ${f.width} × ${f.height}` : ""}</span>
            {canEdit ? (
              <>
                <label class="meta-field">{t("Title")}
                  <input defaultValue={f.title ?? ""} placeholder={f.name} aria-describedby={`name-${f.uuid}`}
                    onChange={(e) => save(f, "title", (e.target as HTMLInputElement).value)} />
                </label>
                {f.type.startsWith("image/") && (
                  <label class="meta-field">{t("Alt text")}
                    <input defaultValue={f.alt ?? ""} aria-describedby={`name-${f.uuid}`}
                      onChange={(e) => save(f, "alt", (e.target as HTMLInputElement).value)} />
                  </label>
                )}
              </>
            ) : (
              <>
                {f.title && <span>{f.title}</span>}
                {f.alt && <span class="muted">{t("Alt text")}: {f.alt}</span>}
              </>
            )}
            <span class="file-actions">
              <button type="button" class="link" onClick={() => showUsage(f)}>{t("Used where")}</button>
              {canDelete && <button type="button" class="link danger" onClick={() => remove(f)}>{t("Delete")}</button>}
            </span>
          </li>
        ))}
      </ul>
      {files.value.length === 0 && !error.value && <p class="muted">{kind || onlyUnused ? t("No file matches.") : t("No files yet.")}</p>}
      {!onlyUnused && (
        <nav class="pager" aria-label={t("Pages")}>
          <button type="button" disabled={page <= 1} onClick={() => setParams((p) => p.set("page", String(page - 1)))}>{t("Previous")}</button>
          <span>{t("Page {page} of {pages}", { page, pages: Math.max(1, Math.ceil(total.value / PAGE)) })}</span>
          <button type="button" disabled={page * PAGE >= total.value} onClick={() => setParams((p) => p.set("page", String(page + 1)))}>{t("Next")}</button>
        </nav>
      )}
      {usageOf.value && (
        <Dialog title={t("Where {file} is used", { file: usageOf.value.file.title || usageOf.value.file.name })} onClose={() => (usageOf.value = null)}>
          {usageOf.value.usage === null ? <p role="status">{t("Looking…")}</p> : usageOf.value.usage.length === 0 ? <p class="muted">{t("No record you may see uses it.")}</p> : (
            <ul class="usage">
              {usageOf.value.usage.map((u) => <li key={`${u.resource}/${u.uuid}`}><a href={`/admin/${u.resource}/${u.uuid}`}>{u.resource}/{u.uuid}</a> ({u.fields.join(", ")})</li>)}
            </ul>
          )}
        </Dialog>
      )}
    </main>
  );
}

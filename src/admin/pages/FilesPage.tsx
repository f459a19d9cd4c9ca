/**
 * The media library: drop or choose several files (progress each, a too-large file named clearly),
 * a grid with thumbnails, editable titles, delete, where a file is used, and the unused ones.
 */
import { useEffect } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { api, ApiError, type Envelope } from "../api";
import { location, setParams } from "../router";
import { may } from "../state";
import { isImage, listFiles, thumb, uploadFile, type FileMeta } from "../media";
import { Dialog } from "../components/Dialog";

const PAGE = 60;
type Usage = { resource: string; uuid: string; fields: string[] };
type Upload = { name: string; progress: number; error?: string };

export function FilesPage() {
  const page = Math.max(1, Number(location.value.params.get("page")) || 1);
  const onlyUnused = location.value.params.get("unused") === "1";
  const files = useSignal<FileMeta[]>([]);
  const total = useSignal(0);
  const error = useSignal("");
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
        files.value = Object.values(r.body.files);
        total.value = files.value.length;
      } else {
        const r = await listFiles({ offset: (page - 1) * PAGE, limit: PAGE });
        files.value = r.files;
        total.value = r.total;
      }
      error.value = "";
    } catch (e) {
      error.value = (e as Error).message;
    }
  };
  useEffect(() => { void load(); }, [page, onlyUnused]);

  const upload = async (list: FileList | File[]) => {
    const chosen = Array.from(list);
    uploads.value = chosen.map((f) => ({ name: f.name, progress: 0 }));
    await Promise.all(chosen.map(async (file, i) => {
      const set = (u: Partial<Upload>) => (uploads.value = uploads.value.map((x, j) => (j === i ? { ...x, ...u } : x)));
      try {
        await uploadFile(file, (p) => set({ progress: p }));
        set({ progress: 1 });
      } catch (e) {
        set({ error: (e as Error).message });
      }
    }));
    await load();
  };
  const rename = async (f: FileMeta, title: string) => {
    if (title === (f.title ?? "")) return;
    try {
      await api("PUT", `/.files/${f.uuid}`, { title });
      await load();
    } catch (e) {
      error.value = (e as ApiError).message;
    }
  };
  const remove = async (f: FileMeta) => {
    if (!confirm(`Delete ${f.title || f.name}? Records that use it will show it as missing.`)) return;
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

  return (
    <main class="page files">
      <div class="heading">
        <h1>Media library</h1>
        <span class="total">{total.value} files</span>
        <div class="actions">
          <label><input type="checkbox" checked={onlyUnused} onChange={() => setParams((p) => { if (onlyUnused) p.delete("unused"); else p.set("unused", "1"); p.delete("page"); })} /> Only unused</label>
        </div>
      </div>
      {canUpload && (
        <div class={`dropzone${over.value ? " over" : ""}`} data-dropzone
          onDragOver={(e) => { e.preventDefault(); over.value = true; }} onDragLeave={() => (over.value = false)}
          onDrop={(e) => { e.preventDefault(); over.value = false; if (e.dataTransfer?.files.length) void upload(e.dataTransfer.files); }}>
          <p>Drop files here, or <label class="button">choose files<input type="file" multiple class="sr-only" onChange={(e) => upload((e.target as HTMLInputElement).files ?? [])} /></label></p>
          {uploads.value.length > 0 && (
            <ul class="uploads">
              {uploads.value.map((u, i) => (
                <li key={i} data-upload={u.name}>{u.name} {u.error ? <span class="error" role="alert">{u.error}</span> : <progress max={1} value={u.progress} aria-label={`Upload of ${u.name}`} />}</li>
              ))}
            </ul>
          )}
        </div>
      )}
      {error.value && <p class="error" role="alert">{error.value}</p>}
      <ul class="grid">
        {files.value.map((f) => (
          <li key={f.uuid} data-file={f.uuid}>
            {isImage(f.type) ? <img src={thumb(f.uuid)} alt={f.title || f.name} loading="lazy" /> : <span class="file-icon" aria-hidden="true">📄</span>}
            {canEdit ? <input aria-label={`Title of ${f.name}`} defaultValue={f.title ?? ""} placeholder={f.name} onChange={(e) => rename(f, (e.target as HTMLInputElement).value)} /> : <span>{f.title || f.name}</span>}
            <span class="muted"><a href={`/download/${f.uuid}`}>{f.name}</a> · {(f.size / 1024).toFixed(1)} KiB</span>
            <span>
              <button type="button" class="link" onClick={() => showUsage(f)}>Used where</button>
              {canDelete && <button type="button" class="link danger" onClick={() => remove(f)}>Delete</button>}
            </span>
          </li>
        ))}
      </ul>
      {!onlyUnused && (
        <nav class="pager" aria-label="Pages">
          <button type="button" disabled={page <= 1} onClick={() => setParams((p) => p.set("page", String(page - 1)))}>Previous</button>
          <span>Page {page} of {Math.max(1, Math.ceil(total.value / PAGE))}</span>
          <button type="button" disabled={page * PAGE >= total.value} onClick={() => setParams((p) => p.set("page", String(page + 1)))}>Next</button>
        </nav>
      )}
      {usageOf.value && (
        <Dialog title={`Where ${usageOf.value.file.title || usageOf.value.file.name} is used`} onClose={() => (usageOf.value = null)}>
          {usageOf.value.usage === null ? <p role="status">Looking…</p> : usageOf.value.usage.length === 0 ? <p class="muted">No record you may see uses it.</p> : (
            <ul class="usage">
              {usageOf.value.usage.map((u) => <li key={`${u.resource}/${u.uuid}`}><a href={`/admin/${u.resource}/${u.uuid}`}>{u.resource}/{u.uuid}</a> ({u.fields.join(", ")})</li>)}
            </ul>
          )}
        </Dialog>
      )}
    </main>
  );
}

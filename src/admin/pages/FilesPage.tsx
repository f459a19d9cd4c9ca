/** The media library: files with thumbnails, paged, and upload. */
import { useEffect } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { api, query, type Envelope } from "../api";
import { location, setParams } from "../router";
import { may } from "../state";

type FileMeta = { uuid: string; name: string; title?: string; type: string; size: number };
const PAGE = 50;

export function FilesPage() {
  const page = Math.max(1, Number(location.value.params.get("page")) || 1);
  const files = useSignal<FileMeta[]>([]);
  const total = useSignal(0);
  const error = useSignal("");
  const load = () => api<Envelope & { files: Record<string, FileMeta> }>("GET", `/.files${query({ limit: PAGE, offset: (page - 1) * PAGE, sort: "_created|desc" })}`)
    .then((r) => { files.value = Object.values(r.body.files ?? {}); total.value = r.body.total ?? 0; }).catch((e: Error) => (error.value = e.message));
  useEffect(() => { void load(); }, [page]);
  const upload = async (e: Event) => {
    e.preventDefault();
    try {
      await api("POST", "/.files", new FormData(e.currentTarget as HTMLFormElement));
      (e.currentTarget as HTMLFormElement | null)?.reset();
      await load();
    } catch (err) {
      error.value = (err as Error).message;
    }
  };
  return (
    <main class="page files">
      <h1>Media library</h1>
      {(may("create-.files") || may("manage-.files")) && (
        <form onSubmit={upload} class="inline"><label>Upload <input type="file" name="file" required /></label><button type="submit">Upload</button></form>
      )}
      {error.value && <p class="error" role="alert">{error.value}</p>}
      <ul class="grid">
        {files.value.map((f) => (
          <li key={f.uuid}>
            {f.type.startsWith("image/") ? <img src={`/img/${f.uuid}/160w`} alt={f.title || f.name} loading="lazy" /> : <span class="file-icon" aria-hidden="true">📄</span>}
            <a href={`/download/${f.uuid}`}>{f.title || f.name}</a>
            <span class="muted">{(f.size / 1024).toFixed(1)} KiB</span>
          </li>
        ))}
      </ul>
      <nav class="pager" aria-label="Pages">
        <button type="button" disabled={page <= 1} onClick={() => setParams((p) => p.set("page", String(page - 1)))}>Previous</button>
        <span>{total.value} files</span>
        <button type="button" disabled={page * PAGE >= total.value} onClick={() => setParams((p) => p.set("page", String(page + 1)))}>Next</button>
      </nav>
    </main>
  );
}

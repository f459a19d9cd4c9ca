/** One chosen file of a media field: thumbnail or name, linked to its download. */
import { useEffect } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { api, type Envelope } from "../api";
import { isImage, thumb, type FileMeta } from "../media";

export function FileChip({ md5 }: { md5: string }) {
  const meta = useSignal<FileMeta | null>(null);
  useEffect(() => {
    api<Envelope & { files: Record<string, FileMeta> }>("GET", `/.files/${md5}`).then((r) => (meta.value = r.body.files[md5] ?? null)).catch(() => (meta.value = null));
  }, [md5]);
  const m = meta.value;
  return (
    <span class="file-chip" data-file={md5}>
      {m && isImage(m.type) ? <img src={thumb(md5, 96)} alt={m.title || m.name} width={64} /> : <span aria-hidden="true">📄</span>}
      <a href={`/download/${md5}`} target="_blank" rel="noopener">{m ? m.title || m.name : md5}</a>
    </span>
  );
}

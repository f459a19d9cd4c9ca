/** One chosen file of a media field: thumbnail (its alt text as alt) or an icon of its kind, linked to its download. */
import { useEffect } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { api, type Envelope } from "../api";
import { isImage, kindIcon, thumb, type FileMeta } from "../media";
import { Icon } from "./Icon";

export function FileChip({ md5 }: { md5: string }) {
  const meta = useSignal<FileMeta | null>(null);
  useEffect(() => {
    api<Envelope & { files: Record<string, FileMeta> }>("GET", `/.files/${md5}`).then((r) => (meta.value = r.body.files[md5] ?? null)).catch(() => (meta.value = null));
  }, [md5]);
  const m = meta.value;
  return (
    <span class="file-chip" data-file={md5}>
      {m && isImage(m.type) ? <img src={thumb(md5, 96)} alt={m.alt ?? ""} width={64} /> : <Icon name={m ? kindIcon(m.type) : "file"} size={24} />}
      <a href={`/download/${md5}`} target="_blank" rel="noopener">{m ? m.title || m.name : md5}</a>
    </span>
  );
}

/** Pick a file from the media library, or upload one into it; `accept` restricts both. */
import { useEffect } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { Dialog } from "./Dialog";
import { Icon } from "./Icon";
import { accepts, isImage, kindIcon, listFiles, thumb, uploadFile, type FileMeta } from "../media";
import { sizeLabel } from "../editor/media-sizes";
import { t } from "../i18n";

export function MediaPicker({ accept, sizes, onPick, onClose }: { accept?: string; sizes?: string[]; onPick: (f: FileMeta, size?: string) => void; onClose: () => void }) {
  const files = useSignal<FileMeta[]>([]);
  const search = useSignal("");
  const error = useSignal("");
  const progress = useSignal<number | null>(null);
  const size = useSignal(sizes?.[0] ?? "");
  // Images are filtered by the server, so that a page of 120 is 120 images, not 120 files of which some are images.
  const kind = accept?.trim() === "image/*" ? "image" : undefined;
  const load = () => listFiles({ search: search.value, limit: 120, kind }).then((r) => (files.value = r.files.filter((f) => accepts(accept, f)))).catch((e: Error) => (error.value = e.message));
  useEffect(() => { void load(); }, [search.value]);
  const upload = async (list: FileList | null) => {
    error.value = "";
    for (const file of Array.from(list ?? [])) {
      if (!accepts(accept, file)) {
        error.value = t("{file} is not accepted here ({accept})", { file: file.name, accept: accept ?? "" });
        continue;
      }
      try {
        const meta = await uploadFile(file, (p) => (progress.value = p));
        progress.value = null;
        onPick(meta, size.value || undefined);
        return;
      } catch (e) {
        error.value = (e as Error).message;
        progress.value = null;
      }
    }
  };
  return (
    <Dialog title={t("Media library")} onClose={onClose}>
      <div class="picker-tools">
        <input type="search" maxLength={200} placeholder={t("Search files")} aria-label={t("Search files")} onInput={(e) => (search.value = (e.target as HTMLInputElement).value)} />
        <label class="button"><Icon name="upload" /> Upload<input type="file" class="sr-only" accept={accept} onChange={(e) => upload((e.target as HTMLInputElement).files)} /></label>
        {sizes && sizes.length > 0 && (
          <label>{t("Size")} <select value={size.value} onChange={(e) => (size.value = (e.target as HTMLSelectElement).value)}>{sizes.map((s) => <option key={s} value={s}>{sizeLabel(s)}</option>)}</select></label>
        )}
      </div>
      {progress.value !== null && <progress max={1} value={progress.value} aria-label={t("Upload progress")} />}
      {error.value && <p class="error" role="alert">{error.value}</p>}
      <ul class="grid picker">
        {files.value.map((f) => (
          <li key={f.uuid}>
            <button type="button" class="pick" data-file={f.uuid} onClick={() => onPick(f, size.value || undefined)}>
              {isImage(f.type) ? <img src={thumb(f.uuid)} alt={f.alt ?? ""} loading="lazy" /> : <span class="file-icon"><Icon name={kindIcon(f.type)} size={40} /></span>}
              <span class="pick-name">{f.title || f.name}</span>
            </button>
          </li>
        ))}
        {files.value.length === 0 && <li class="muted">{t("No files.")}</li>}
      </ul>
    </Dialog>
  );
}

/** The picker behind `image`, `file` and `upload`: one file of the media library, or none. */
import { useSignal } from "@preact/signals";
import { MediaPicker } from "../components/MediaPicker";
import { FileChip } from "../components/FileChip";
import type { FieldProps } from "./types";
import { t } from "../i18n";

export function MediaField({ id, field, value, onChange, readOnly, accept, label }: FieldProps & { accept?: string }) {
  const picking = useSignal(false);
  const md5 = typeof value === "string" && value ? value : null;
  return (
    <div id={id} class="media-field" role="group" aria-label={label ?? field.label}>
      {md5 ? <FileChip md5={md5} /> : <span class="muted">{t("No file")}</span>}
      {!readOnly && <button type="button" onClick={() => (picking.value = true)}>{md5 ? t("Replace…") : t("Choose…")}</button>}
      {!readOnly && md5 && <button type="button" class="link danger" onClick={() => onChange("")}>{t("Remove")}</button>}
      {picking.value && <MediaPicker accept={field.accept ?? accept} onClose={() => (picking.value = false)} onPick={(f) => { onChange(f.uuid); picking.value = false; }} />}
    </div>
  );
}

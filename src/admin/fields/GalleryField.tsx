/** A `gallery` field: an ordered list of images of the media library. */
import { useSignal } from "@preact/signals";
import { MediaPicker } from "../components/MediaPicker";
import { FileChip } from "../components/FileChip";
import { Icon } from "../components/Icon";
import type { FieldProps } from "./types";
import { t } from "../i18n";

export function GalleryField({ id, field, value, onChange, readOnly, label }: FieldProps) {
  const picking = useSignal(false);
  const list = Array.isArray(value) ? value.map(String) : [];
  const move = (i: number, by: number) => {
    const next = [...list];
    [next[i], next[i + by]] = [next[i + by], next[i]];
    onChange(next);
  };
  return (
    <div id={id} class="gallery-field" role="group" aria-label={label ?? field.label}>
      <ol>
        {list.map((md5, i) => (
          <li key={`${md5}-${i}`}>
            <FileChip md5={md5} />
            {!readOnly && <>
              <button type="button" class="link" aria-label={t("Move image {n} up", { n: i + 1 })} disabled={i === 0} onClick={() => move(i, -1)}><Icon name="up" /></button>
              <button type="button" class="link" aria-label={t("Move image {n} down", { n: i + 1 })} disabled={i === list.length - 1} onClick={() => move(i, 1)}><Icon name="down" /></button>
              <button type="button" class="link danger" aria-label={t("Remove image {n}", { n: i + 1 })} onClick={() => onChange(list.filter((_, j) => j !== i))}><Icon name="close" /></button>
            </>}
          </li>
        ))}
      </ol>
      {!readOnly && <button type="button" onClick={() => (picking.value = true)}>{t("Add image…")}</button>}
      {picking.value && <MediaPicker accept={field.accept ?? "image/*"} onClose={() => (picking.value = false)} onPick={(f) => { onChange([...list, f.uuid]); picking.value = false; }} />}
    </div>
  );
}

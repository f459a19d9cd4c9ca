/**
 * A `slug` field: follows its `source` fields (joined by a space, per language when translated)
 * until the editor types one. A record saved with a slug keeps it, whatever the title becomes and
 * whatever `preserve_existing` says: the slug is in published URLs, and a trial's retitled article
 * moved its address. The editor can unlock it, with a warning, and it follows its sources again.
 */
import { useLayoutEffect, useRef } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { slugFrom } from "../slugify";
import { Icon } from "../components/Icon";
import type { FieldProps } from "./types";
import { t } from "../i18n";

export function SlugField({ id, field, value, onChange, readOnly, model, language, uuid, label }: FieldProps) {
  const sources = (field.source ?? "").split(",").filter(Boolean);
  const computed = sources.length ? slugFrom(sources, model, language) : "";
  const saved = typeof value === "string" ? value : "";
  const original = useRef(saved);
  const locked = useSignal(Boolean(uuid) && saved !== "");
  // Decided once per editor: follow the sources unless a saved slug is to be kept or differs.
  const following = useRef(!locked.value && (!saved || (!field.preserve_existing && saved === computed)));
  // In the commit that shows the new source: a save right after typing a title sends its slug.
  useLayoutEffect(() => {
    if (following.current && !locked.value && sources.length && computed !== saved) onChange(computed);
  }, [computed]);
  const unlock = () => {
    locked.value = false;
    following.current = true;
    if (sources.length && computed !== saved) onChange(computed);
  };
  const keep = () => {
    locked.value = true;
    following.current = false;
    onChange(original.current);
  };
  const canLock = !readOnly && Boolean(uuid) && original.current !== "";
  return (
    <div class="slug">
      <div class="slug-row">
        <input id={id} aria-label={label} type="text" value={saved} required={field.required} readOnly={readOnly || locked.value}
          onInput={(e) => { following.current = false; onChange((e.target as HTMLInputElement).value); }} />
        {canLock && locked.value && <button type="button" class="icon-button" aria-label={t("Unlock slug")} title={t("Unlock slug")} onClick={unlock}><Icon name="lock" /></button>}
        {canLock && !locked.value && <button type="button" onClick={keep}><Icon name="undo" /> {t("Keep “{slug}”", { slug: original.current })}</button>}
      </div>
      {canLock && !locked.value && (
        <p class="warning" role="note">
          {t("Changing the slug changes this record's address: links to the old address (/{slug}) stop working.", { slug: original.current })}
        </p>
      )}
    </div>
  );
}

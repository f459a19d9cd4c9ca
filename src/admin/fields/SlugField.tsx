/**
 * A `slug` field: follows its `source` fields (joined by a space, per language when translated)
 * until the editor types one; a saved slug stays when `preserve_existing` is set.
 */
import { useEffect, useRef } from "preact/hooks";
import { slugFrom } from "../slugify";
import type { FieldProps } from "./types";

export function SlugField({ id, field, value, onChange, readOnly, model, language }: FieldProps) {
  const sources = (field.source ?? "").split(",").filter(Boolean);
  const computed = sources.length ? slugFrom(sources, model, language) : "";
  const saved = typeof value === "string" ? value : "";
  // Decided once per editor: follow the sources unless a saved slug is to be kept or differs.
  const following = useRef(!saved || (!field.preserve_existing && saved === computed));
  useEffect(() => {
    if (following.current && sources.length && computed !== saved) onChange(computed);
  }, [computed]);
  return <input id={id} type="text" value={saved} required={field.required} readOnly={readOnly}
    onInput={(e) => { following.current = false; onChange((e.target as HTMLInputElement).value); }} />;
}

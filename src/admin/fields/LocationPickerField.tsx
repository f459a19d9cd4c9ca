/**
 * A `location-picker` field: latitude here, longitude in the field `longitude_field` names, edited
 * together. A map only when RESD_MAP_TILES names a tile server; coordinates always.
 */
import { settings } from "../state";
import { TileMap } from "../components/TileMap";
import type { FieldProps } from "./types";
import { t } from "../i18n";

const num = (v: string) => (v.trim() === "" ? null : Number(v));

export function LocationPickerField({ id, field, value, onChange, readOnly, model, setField, label }: FieldProps) {
  const lng = field.longitude_field;
  const show = (v: unknown) => (v === null || v === undefined ? "" : String(v));
  const tiles = settings.value.map_tiles;
  const at = (v: unknown) => (typeof v === "number" ? v : null);
  return (
    <div id={id} class="location" role="group" aria-label={label ?? field.label}>
      {tiles && lng && <TileMap tiles={tiles} lat={at(value)} lng={at(model[lng])} readOnly={readOnly} onPick={(la, lo) => { onChange(la); setField(lng, lo); }} />}
      <label for={`${id}-latitude`}>{t("Latitude")} <input id={`${id}-latitude`} type="number" step="any" min={-90} max={90} value={show(value)} readOnly={readOnly} required={field.required}
        onInput={(e) => onChange(num((e.target as HTMLInputElement).value))} /></label>
      {lng && <label for={`${id}-longitude`}>{t("Longitude")} <input id={`${id}-longitude`} type="number" step="any" min={-180} max={180} value={show(model[lng])} readOnly={readOnly} required={field.required}
        onInput={(e) => setField(lng, num((e.target as HTMLInputElement).value))} /></label>}
    </div>
  );
}

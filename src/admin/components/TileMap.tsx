/**
 * A small slippy map from the configured tile URL (RESD_MAP_TILES): the point marked, a click sets
 * it, + and − zoom. Web Mercator tiles of 256 px.
 */
import { useEffect, useRef } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { Icon } from "./Icon";
import { t } from "../i18n";

const TILE = 256;
const HEIGHT = 300;

const toPixels = (lat: number, lng: number, z: number) => {
  const world = TILE * 2 ** z;
  const s = Math.sin((Math.max(-85.05, Math.min(85.05, lat)) * Math.PI) / 180);
  return { x: ((lng + 180) / 360) * world, y: (0.5 - Math.log((1 + s) / (1 - s)) / (4 * Math.PI)) * world };
};
const toLatLng = (x: number, y: number, z: number) => {
  const world = TILE * 2 ** z;
  const lng = (x / world) * 360 - 180;
  const lat = (Math.atan(Math.sinh(Math.PI * (1 - (2 * y) / world))) * 180) / Math.PI;
  return { lat: Math.round(lat * 1e6) / 1e6, lng: Math.round(lng * 1e6) / 1e6 };
};

export function TileMap({ tiles, lat, lng, onPick, readOnly }: { tiles: string; lat: number | null; lng: number | null; onPick: (lat: number, lng: number) => void; readOnly: boolean }) {
  const box = useRef<HTMLDivElement>(null);
  const zoom = useSignal(lat === null ? 2 : 12);
  const measured = useSignal(600);
  useEffect(() => {
    const el = box.current!;
    const watch = new ResizeObserver(() => (measured.value = el.clientWidth || 600));
    watch.observe(el);
    return () => watch.disconnect();
  }, []);
  const width = measured.value;
  const z = zoom.value;
  const center = toPixels(lat ?? 20, lng ?? 0, z);
  const left = center.x - width / 2;
  const top = center.y - HEIGHT / 2;
  const n = 2 ** z;
  const cells: { key: string; src: string; x: number; y: number }[] = [];
  for (let ty = Math.floor(top / TILE); ty <= Math.floor((top + HEIGHT) / TILE); ty++) {
    if (ty < 0 || ty >= n) continue;
    for (let tx = Math.floor(left / TILE); tx <= Math.floor((left + width) / TILE); tx++) {
      const wx = ((tx % n) + n) % n;
      cells.push({ key: `${tx}/${ty}`, src: tiles.replace("{z}", String(z)).replace("{x}", String(wx)).replace("{y}", String(ty)), x: tx * TILE - left, y: ty * TILE - top });
    }
  }
  const click = (e: MouseEvent) => {
    if (readOnly) return;
    const r = (e.currentTarget as HTMLElement).getBoundingClientRect();
    const p = toLatLng(left + e.clientX - r.left, top + e.clientY - r.top, z);
    onPick(p.lat, p.lng);
  };
  return (
    <div class="tilemap" ref={box} style={{ height: `${HEIGHT}px` }} onClick={click} data-map>
      {cells.map((c) => <img key={c.key} src={c.src} alt="" draggable={false} style={{ left: `${c.x}px`, top: `${c.y}px` }} />)}
      {lat !== null && lng !== null && <span class="pin" aria-hidden="true" style={{ left: `${width / 2}px`, top: `${HEIGHT / 2}px`, lineHeight: 0, color: "#c62828" }}><Icon name="pin" size={28} /></span>}
      <div class="zoom" onClick={(e) => e.stopPropagation()}>
        <button type="button" aria-label={t("Zoom in")} disabled={z >= 19} onClick={() => (zoom.value = z + 1)}>+</button>
        <button type="button" aria-label={t("Zoom out")} disabled={z <= 1} onClick={() => (zoom.value = z - 1)}>−</button>
      </div>
    </div>
  );
}

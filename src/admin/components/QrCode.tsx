/**
 * A QR code made in the browser (uqr), so the secret it carries never leaves the page for a
 * service that draws it. An image of SVG: the admin's policy allows data: images.
 */
import { useMemo } from "preact/hooks";
import { renderSVG } from "uqr";

export function QrCode({ value, label, size = 200 }: { value: string; label: string; size?: number }) {
  const src = useMemo(() => `data:image/svg+xml;charset=utf-8,${encodeURIComponent(renderSVG(value, { border: 2 }))}`, [value]);
  return <img class="qr" src={src} alt={label} width={size} height={size} />;
}

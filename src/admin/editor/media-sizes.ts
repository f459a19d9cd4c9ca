/**
 * How a `media_sizes` entry becomes markup. An entry `name-percent` (e.g. `md-70`) means "shown at
 * that percent of the text width": the image gets `class="name-percent"` (for the site's CSS),
 * `sizes="percentvw"`, `src` at 1280 px and a `srcset` of 640, 1280 and 1920 px (never enlarged by
 * /img). Without a size: the image at 1280 px, no class.
 */
import type { FileMeta } from "../media";

const WIDTHS = [640, 1280, 1920];

export function mediaImageAttrs(f: FileMeta, size?: string): Record<string, string> {
  const attrs: Record<string, string> = {
    src: `/img/${f.uuid}/1280w`,
    srcset: WIDTHS.map((w) => `/img/${f.uuid}/${w}w ${w}w`).join(", "),
    alt: f.title || f.name.replace(/\.[^.]+$/, ""),
  };
  const m = size ? /^([a-z]+)-(\d{1,3})$/.exec(size) : null;
  if (m) {
    attrs.class = size!;
    attrs.sizes = `${Math.min(100, Number(m[2]))}vw`;
  }
  return attrs;
}

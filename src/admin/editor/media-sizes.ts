/**
 * How a `media_sizes` entry becomes markup. An entry `name-percent` (e.g. `md-70`) means "shown at
 * that percent of the text width": the image gets `class="name-percent"` (for the site's CSS),
 * `sizes="percentvw"`, `src` at 1280 px and a `srcset` of 640, 1280 and 1920 px (never enlarged by
 * /img). Without a size: the image at 1280 px, no class.
 */
import type { FileMeta } from "../media";
import { t } from "../i18n";

const WIDTHS = [640, 1280, 1920];
const SIZE = /^([a-z]+)-(\d{1,3})$/;

/** The usual names of the t-shirt scale; any other name is shown capitalised ("hero" → "Hero"). */
const NAMES: Record<string, () => string> = {
  xxs: () => t("Extra extra small"), xs: () => t("Extra small"), sm: () => t("Small"), md: () => t("Medium"), lg: () => t("Large"),
  xl: () => t("Extra large"), xxl: () => t("Extra extra large"), full: () => t("Full width"),
};

/** What an editor reads for a size: `sm-50` is "Small, 50 %". An entry of another shape is shown as written. */
export function sizeLabel(size: string): string {
  const m = SIZE.exec(size);
  if (!m) return size;
  const name = Object.hasOwn(NAMES, m[1]) ? NAMES[m[1]]() : m[1][0].toUpperCase() + m[1].slice(1);
  return t("{size}, {percent} %", { size: name, percent: Math.min(100, Number(m[2])) });
}

/**
 * The inserted image's alt is the file's alt text; a file without one falls back to its title,
 * then to its name without the extension, as before alt text existed.
 */
export function mediaImageAttrs(f: FileMeta, size?: string): Record<string, string> {
  const attrs: Record<string, string> = {
    src: `/img/${f.uuid}/1280w`,
    srcset: WIDTHS.map((w) => `/img/${f.uuid}/${w}w ${w}w`).join(", "),
    alt: f.alt || f.title || f.name.replace(/\.[^.]+$/, ""),
  };
  const m = size ? SIZE.exec(size) : null;
  if (m) {
    attrs.class = size!;
    attrs.sizes = `${Math.min(100, Number(m[2]))}vw`;
  }
  return attrs;
}

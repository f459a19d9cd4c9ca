/** Width, height and orientation of an uploaded raster image, read from its header by sharp. */
import sharp from "sharp";
import { RASTER_TYPES } from "./sniff";

export type ImageInfo = { width: number; height: number; orientation: "landscape" | "portrait" | "square" };

/**
 * Dimensions as the image is displayed (EXIF rotation applied), or null when sharp cannot read
 * the header. Only the header is read, so a hostile image costs nothing here.
 */
export async function imageInfo(input: string | Uint8Array, type: string): Promise<ImageInfo | null> {
  if (!RASTER_TYPES.has(type)) return null;
  try {
    const m = await sharp(input, { limitInputPixels: false }).metadata();
    const width = m.autoOrient?.width ?? m.width;
    const height = m.autoOrient?.height ?? m.height;
    if (!width || !height) return null;
    return { width, height, orientation: width > height ? "landscape" : width < height ? "portrait" : "square" };
  } catch {
    // Not decodable (a truncated or fake image): stored as a file without dimensions.
    return null;
  }
}

/** File names as stored: the last path part only, no control characters, bounded length. */

const MAX_NAME_BYTES = 255;

/**
 * Cleans a client-supplied file name. Path parts ("../", "C:\\") are dropped, control and
 * reserved characters become "_", and the name is cut to 255 UTF-8 bytes keeping its extension.
 */
export function cleanFileName(raw: string | null | undefined, fallback = "file"): string {
  let name = (raw ?? "").normalize("NFC");
  name = name.slice(Math.max(name.lastIndexOf("/"), name.lastIndexOf("\\")) + 1);
  name = name.replace(/[\u0000-\u001f\u007f-\u009f]/g, "").replace(/[<>:"|?*]/g, "_").replace(/\s+/g, " ");
  // Leading dots would hide the file on download; trailing dots and spaces are invalid on Windows.
  name = name.replace(/^[.\s]+/, "").replace(/[.\s]+$/, "");
  if (!name) return fallback;
  const enc = new TextEncoder();
  if (enc.encode(name).length <= MAX_NAME_BYTES) return name;
  const ext = /\.[A-Za-z0-9]{1,10}$/.exec(name)?.[0] ?? "";
  let stem = [...name.slice(0, name.length - ext.length)];
  while (stem.length && enc.encode(stem.join("") + ext).length > MAX_NAME_BYTES) stem.pop();
  return stem.join("") + ext || fallback;
}

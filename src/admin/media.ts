/** The media library as the pages use it: list, upload with progress, kinds of file, and `accept` matching. */
import { api, query, type Envelope } from "./api";
import type { IconName } from "./components/Icon";
import { t } from "./i18n";

/** `alt` is missing on files stored before resd kept alt text: read it as "". */
export type FileMeta = { uuid: string; name: string; title?: string; alt?: string; type: string; size: number; width?: number; height?: number };

/**
 * The types resd stores for each kind of file. Exact lists rather than prefixes, because the list
 * API filters by equal values: images are complete (an image type is only ever sniffed, never
 * taken from the client), documents and video/audio hold what is sniffed, mapped from an
 * extension, or commonly claimed; a rarer claimed type counts as other.
 */
export const KIND_TYPES = {
  image: ["image/jpeg", "image/png", "image/gif", "image/webp", "image/avif", "image/heic", "image/heif", "image/tiff", "image/bmp", "image/x-icon", "image/svg+xml"],
  document: [
    "application/pdf", "text/plain", "text/csv", "text/tab-separated-values", "text/markdown", "text/html", "application/xhtml+xml",
    "application/xml", "text/xml", "application/json", "text/calendar", "text/vtt", "application/x-subrip", "application/rtf", "text/rtf",
    "application/msword", "application/vnd.ms-excel", "application/vnd.ms-powerpoint",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "application/vnd.oasis.opendocument.text", "application/vnd.oasis.opendocument.spreadsheet",
    "application/vnd.oasis.opendocument.presentation", "application/epub+zip",
  ],
  media: [
    "audio/mpeg", "audio/ogg", "audio/flac", "audio/wav", "audio/x-wav", "audio/mp4", "audio/x-m4a", "audio/aac", "audio/webm", "audio/opus", "audio/midi",
    "video/mp4", "video/quicktime", "video/3gpp", "video/webm", "video/x-msvideo", "video/ogg", "video/mpeg", "video/x-matroska",
  ],
} as const;

export type Kind = keyof typeof KIND_TYPES | "other";
export const KINDS: { value: Kind; label: () => string }[] = [
  { value: "image", label: () => t("Images") },
  { value: "document", label: () => t("Documents") },
  { value: "media", label: () => t("Video and audio") },
  { value: "other", label: () => t("Other") },
];
const KNOWN = Object.entries(KIND_TYPES) as [keyof typeof KIND_TYPES, readonly string[]][];

export function kindOf(type: string): Kind {
  return KNOWN.find(([, types]) => types.includes(type))?.[0] ?? "other";
}

/** The bundled icon that stands for a file without a thumbnail. */
export const kindIcon = (type: string): IconName => ({ image: "image", document: "file", media: "play", other: "archive" } as const)[kindOf(type)];

/** The list API's filter for one kind; "other" is every type no kind names. */
function kindFilter(kind: Kind): string {
  return kind === "other" ? `type:!${KNOWN.flatMap(([, t]) => t).join("||")}` : `type:${KIND_TYPES[kind].join("||")}`;
}

/** Orders of the library, as the list API's `sort`. */
export const SORTS = {
  newest: { label: () => t("Newest first"), sort: "_created|desc" },
  oldest: { label: () => t("Oldest first"), sort: "_created|asc" },
  name: { label: () => t("Name"), sort: "name|text|asc" },
  size: { label: () => t("Largest first"), sort: "size|desc" },
} as const;
export type SortName = keyof typeof SORTS;
export const isSortName = (s: string | null): s is SortName => s !== null && Object.hasOwn(SORTS, s);
export const isKind = (s: string | null): s is Kind => KINDS.some((k) => k.value === s);

export async function listFiles(opts: { offset?: number; limit?: number; search?: string; kind?: Kind; sort?: SortName }): Promise<{ files: FileMeta[]; total: number }> {
  const q = query({ limit: opts.limit ?? 60, offset: opts.offset ?? 0, sort: SORTS[opts.sort ?? "newest"].sort, search: opts.search, filter: opts.kind ? kindFilter(opts.kind) : undefined });
  const r = await api<Envelope & { files: Record<string, FileMeta> }>("GET", `/.files${q}`);
  return { files: Object.values(r.body.files ?? {}), total: r.body.total ?? 0 };
}

/** The same order as SORTS, for lists the server does not sort (the unused files). */
export function sortFiles(files: FileMeta[], sort: SortName): FileMeta[] {
  const out = [...files];
  if (sort === "name") out.sort((a, b) => a.name.localeCompare(b.name, undefined, { sensitivity: "base" }));
  else if (sort === "size") out.sort((a, b) => b.size - a.size);
  // The unused list comes oldest first.
  else if (sort === "newest") out.reverse();
  return out;
}

/** Does a file match an `accept` list such as "image/*,.pdf"? Empty accepts everything. */
export function accepts(accept: string | undefined, f: { name: string; type: string }): boolean {
  if (!accept) return true;
  return accept.split(",").map((a) => a.trim().toLowerCase()).filter(Boolean).some((a) =>
    a.startsWith(".") ? f.name.toLowerCase().endsWith(a) : a.endsWith("/*") ? f.type.startsWith(a.slice(0, -1)) : f.type === a);
}

/** Uploads one file into the library; progress from 0 to 1. Resolves with its metadata. */
export function uploadFile(file: File, onProgress: (p: number) => void): Promise<FileMeta> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/api/v1/.files");
    xhr.upload.onprogress = (e) => { if (e.lengthComputable) onProgress(e.loaded / e.total); };
    xhr.onload = () => {
      let body: Envelope & { files?: Record<string, FileMeta> };
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        return reject(new Error(xhr.status === 413 ? t("{file} is larger than the server accepts", { file: file.name }) : t("upload failed: HTTP {status}", { status: xhr.status })));
      }
      if (xhr.status === 413) return reject(new Error(`${t("{file} is larger than the server accepts", { file: file.name })} (${body.details ?? "413"})`));
      if (xhr.status >= 400) return reject(new Error(`${file.name}: ${body.details ?? body.message ?? xhr.status}`));
      resolve(Object.values(body.files ?? {})[0]!);
    };
    xhr.onerror = () => reject(new Error(`${file.name}: ${t("the upload failed")}`));
    const form = new FormData();
    form.append("file", file);
    xhr.send(form);
  });
}

/** A size for people: bytes, KiB or MiB with one decimal. */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

export const thumb = (md5: string, width = 160) => `/img/${md5}/${width}w`;
export const isImage = (type: string) => type.startsWith("image/") && type !== "image/svg+xml";

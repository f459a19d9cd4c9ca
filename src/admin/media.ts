/** The media library as the pages use it: list, upload with progress, and `accept` matching. */
import { api, query, type Envelope } from "./api";

export type FileMeta = { uuid: string; name: string; title?: string; type: string; size: number; width?: number; height?: number };

export async function listFiles(opts: { offset?: number; limit?: number; search?: string; image?: boolean }): Promise<{ files: FileMeta[]; total: number }> {
  const filter = opts.image ? "type:image/jpeg||image/png||image/gif||image/webp||image/avif||image/tiff" : undefined;
  const r = await api<Envelope & { files: Record<string, FileMeta> }>("GET", `/.files${query({ limit: opts.limit ?? 60, offset: opts.offset ?? 0, sort: "_created|desc", search: opts.search, filter })}`);
  return { files: Object.values(r.body.files ?? {}), total: r.body.total ?? 0 };
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
        return reject(new Error(xhr.status === 413 ? `${file.name} is larger than the server accepts` : `upload failed: HTTP ${xhr.status}`));
      }
      if (xhr.status === 413) return reject(new Error(`${file.name} is larger than the server accepts (${body.details ?? "413"})`));
      if (xhr.status >= 400) return reject(new Error(`${file.name}: ${body.details ?? body.message ?? xhr.status}`));
      resolve(Object.values(body.files ?? {})[0]!);
    };
    xhr.onerror = () => reject(new Error(`${file.name}: the upload failed`));
    const form = new FormData();
    form.append("file", file);
    xhr.send(form);
  });
}

export const thumb = (md5: string, width = 160) => `/img/${md5}/${width}w`;
export const isImage = (type: string) => type.startsWith("image/") && type !== "image/svg+xml";

/** Uploads through the real `/api/v1/.files` endpoint, for the media tests. */
import type { adminSite } from "./site";

type S = Awaited<ReturnType<typeof adminSite>>;

/** Uploads bytes as the admin and returns the file's uuid (its MD5); any answer but 201 throws. */
export async function upload(s: S, bytes: Uint8Array, name: string, type: string): Promise<string> {
  const fd = new FormData();
  fd.append("file", new Blob([new Uint8Array(bytes)], { type }), name);
  const res = await fetch(`${s.base}/api/v1/.files`, { method: "POST", body: fd, headers: { authorization: `Bearer ${s.token}` } });
  if (res.status !== 201) throw new Error(`upload ${res.status}: ${await res.text()}`);
  return Object.keys(((await res.json()) as { files: Record<string, unknown> }).files)[0];
}

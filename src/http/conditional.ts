/**
 * Last-Modified / If-Modified-Since. HTTP dates have whole seconds, so a change in the current second
 * could follow this answer unseen: such an answer names the previous second, which can never
 * produce a wrong 304.
 */
export function lastModifiedHeader(ms: number): string {
  const sec = Math.floor(ms / 1000);
  const sent = sec >= Math.floor(Date.now() / 1000) ? sec - 1 : sec;
  return new Date(Math.max(sent, 0) * 1000).toUTCString();
}

export function notModified(request: Request, ms: number): boolean {
  const ims = request.headers.get("if-modified-since");
  if (!ims) return false;
  const since = Date.parse(ims);
  return Number.isFinite(since) && Math.floor(ms / 1000) <= Math.floor(since / 1000);
}

export const notModifiedResponse = (lastModified: string) => new Response(null, { status: 304, headers: { "last-modified": lastModified } });

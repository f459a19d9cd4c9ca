/**
 * A streaming multipart/form-data reader (RFC 7578). `Request.formData()` materialises the whole
 * body in memory; this yields one part at a time and streams each part's body in chunks, so an
 * upload of any size passes through a small, bounded buffer.
 */
import { badRequest } from "../errors";

export type Part = {
  /** The form field name. */
  name: string;
  /** The file name the client sent, if the part is a file. */
  filename: string | null;
  contentType: string | null;
  /** The part's bytes; must be consumed (or left) before asking for the next part. */
  body: AsyncIterable<Uint8Array>;
};

const MAX_HEADER_BYTES = 16 * 1024;
const CRLF = Buffer.from("\r\n");
const HEADER_END = Buffer.from("\r\n\r\n");

/** The boundary from a Content-Type header, or null when it is not multipart/form-data. */
export function multipartBoundary(contentType: string | null): string | null {
  if (!contentType || !/^multipart\/form-data\s*(;|$)/i.test(contentType)) return null;
  const m = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(contentType);
  return m ? (m[1] ?? m[2]) : null;
}

/** Parameters of a Content-Disposition header value (quoted strings and RFC 5987 `filename*`). */
function dispositionParams(value: string): Record<string, string> {
  const out: Record<string, string> = {};
  const re = /;\s*([A-Za-z0-9_*-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g;
  for (let m = re.exec(value); m; m = re.exec(value)) {
    const key = m[1].toLowerCase();
    const v = m[2] !== undefined ? m[2].replace(/\\(.)/g, "$1") : m[3].trim();
    if (key.endsWith("*")) {
      const ext = /^([A-Za-z0-9-]+)'[^']*'(.*)$/.exec(v);
      if (ext && ext[1].toLowerCase() === "utf-8") {
        try {
          out[key.slice(0, -1)] = decodeURIComponent(ext[2]);
        } catch {
          // a malformed extended value is ignored; the plain parameter still applies
        }
      }
    } else if (!(key in out)) out[key] = v;
  }
  return out;
}

/** Reads parts from a body stream. Throws 400 INVALID_DATA on malformed framing. */
export async function* readMultipart(body: AsyncIterable<Uint8Array>, boundary: string): AsyncGenerator<Part> {
  const it = body[Symbol.asyncIterator]();
  const delim = Buffer.from(`\r\n--${boundary}`);
  // A leading CRLF lets the first boundary (which has none) match the same delimiter.
  let buf: Buffer = Buffer.from("\r\n");
  let ended = false;

  const fill = async (): Promise<boolean> => {
    if (ended) return false;
    const next = await it.next();
    if (next.done) {
      ended = true;
      return false;
    }
    buf = buf.length ? Buffer.concat([buf, next.value]) : Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength);
    return true;
  };

  /** Skips to just after the next delimiter; false at end of input. */
  const skipPast = async (): Promise<boolean> => {
    for (;;) {
      const i = buf.indexOf(delim);
      if (i >= 0) {
        buf = buf.subarray(i + delim.length);
        return true;
      }
      buf = buf.subarray(Math.max(0, buf.length - delim.length + 1));
      if (!(await fill())) return false;
    }
  };

  let partDone = true;
  /** Streams bytes up to the next delimiter, keeping back a tail that might start one. */
  async function* partBody(): AsyncGenerator<Uint8Array> {
    for (;;) {
      const i = buf.indexOf(delim);
      if (i >= 0) {
        const chunk = buf.subarray(0, i);
        buf = buf.subarray(i + delim.length);
        partDone = true;
        if (chunk.length) yield chunk;
        return;
      }
      const keep = delim.length - 1;
      if (buf.length > keep) {
        const chunk = buf.subarray(0, buf.length - keep);
        buf = buf.subarray(buf.length - keep);
        yield chunk;
      }
      if (!(await fill())) throw badRequest("the multipart body ended inside a part");
    }
  }

  try {
    if (!(await skipPast())) throw badRequest("the multipart body has no boundary line");
    for (;;) {
      // After a delimiter: "--" closes the body, otherwise optional padding then CRLF and headers.
      while (buf.length < 2 && (await fill()));
      if (buf.subarray(0, 2).toString() === "--") return;
      let h: number;
      while ((h = buf.indexOf(HEADER_END)) < 0) {
        if (buf.length > MAX_HEADER_BYTES) throw badRequest("multipart part headers are too long");
        if (!(await fill())) throw badRequest("the multipart body ended inside part headers");
      }
      const lineEnd = buf.indexOf(CRLF);
      if (buf.subarray(0, lineEnd).toString().trim() !== "") throw badRequest("malformed multipart boundary line");
      const headerText = buf.subarray(lineEnd + 2, h).toString("utf8");
      buf = buf.subarray(h + 4);
      const headers = new Map<string, string>();
      for (const line of headerText.split("\r\n")) {
        const c = line.indexOf(":");
        if (c > 0) headers.set(line.slice(0, c).trim().toLowerCase(), line.slice(c + 1).trim());
      }
      const disposition = headers.get("content-disposition") ?? "";
      if (!/^form-data\b/i.test(disposition)) throw badRequest("a multipart part lacks Content-Disposition: form-data");
      const params = dispositionParams(disposition);
      partDone = false;
      const part: Part = {
        name: params.name ?? "",
        filename: params.filename ?? null,
        contentType: headers.get("content-type") ?? null,
        body: partBody(),
      };
      yield part;
      // Whatever the consumer left unread is skipped.
      if (!partDone) for await (const _ of part.body);
      if (!partDone && !(await skipPast())) throw badRequest("the multipart body ended inside a part");
    }
  } finally {
    await it.return?.();
  }
}

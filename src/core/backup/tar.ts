/**
 * A streaming tar (POSIX ustar + pax long names) writer and reader. Written here rather than with
 * Bun.Archive because Bun 1.4.5's Archive holds every entry in memory and stored file-backed Blobs
 * (Bun.file) as empty entries; a site's file store may be many gigabytes, so bytes must stream.
 * Archives open with GNU/BSD `tar` too.
 */

const BLOCK = 512;
const enc = new TextEncoder();
const dec = new TextDecoder();

export type TarEntry = {
  path: string;
  size: number;
  /** Seconds since the epoch. */
  mtime: number;
  mode: number;
  /** The content; must yield exactly `size` bytes. */
  body: () => AsyncIterable<Uint8Array>;
};

function octal(buf: Uint8Array, offset: number, width: number, value: number) {
  buf.set(enc.encode(value.toString(8).padStart(width - 1, "0").slice(-(width - 1))), offset);
}

function header(path: string, size: number, mtime: number, mode: number, type: string): Uint8Array {
  const h = new Uint8Array(BLOCK);
  h.set(enc.encode(path).subarray(0, 100), 0);
  octal(h, 100, 8, mode & 0o7777);
  octal(h, 108, 8, 0);
  octal(h, 116, 8, 0);
  octal(h, 124, 12, size < 8 ** 11 ? size : 0); // larger sizes travel in the pax header
  octal(h, 136, 12, Math.max(0, Math.floor(mtime)));
  h.set(enc.encode("        "), 148);
  h.set(enc.encode(type), 156);
  h.set(enc.encode("ustar\u000000"), 257);
  let sum = 0;
  for (const b of h) sum += b;
  h.set(enc.encode(`${sum.toString(8).padStart(6, "0")}\u0000 `), 148);
  return h;
}

/** A pax record "LEN key=value\n", where LEN counts itself. */
function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let len = enc.encode(body).length;
  len += String(len).length;
  if (String(len).length !== String(len - String(len).length).length) len++;
  return `${len}${body}`;
}

const padding = (size: number) => new Uint8Array((BLOCK - (size % BLOCK)) % BLOCK);

/** Yields the archive's bytes entry by entry; memory stays at one chunk whatever the sizes. */
export async function* writeTar(entries: AsyncIterable<TarEntry> | Iterable<TarEntry>): AsyncGenerator<Uint8Array> {
  for await (const e of entries) {
    const nameBytes = enc.encode(e.path);
    const pax = (nameBytes.length > 100 || /[^\x20-\x7e]/.test(e.path) ? paxRecord("path", e.path) : "") + (e.size >= 8 ** 11 ? paxRecord("size", String(e.size)) : "");
    if (pax) {
      const data = enc.encode(pax);
      yield header(`PaxHeader/${e.path.replace(/[^\x20-\x7e]/g, "_").slice(-80)}`, data.length, e.mtime, 0o644, "x");
      yield data;
      yield padding(data.length);
    }
    yield header(e.path, e.size, e.mtime, e.mode, "0");
    let n = 0;
    for await (const chunk of e.body()) {
      n += chunk.length;
      if (n > e.size) throw new Error(`${e.path} grew while it was archived`);
      yield chunk;
    }
    if (n !== e.size) throw new Error(`${e.path} changed while it was archived (${n} of ${e.size} bytes)`);
    yield padding(e.size);
  }
  yield new Uint8Array(BLOCK * 2);
}

/** Reads exact byte counts from a stream of chunks. */
class ByteReader {
  private chunks: Uint8Array[] = [];
  private buffered = 0;
  constructor(private readonly it: AsyncIterator<Uint8Array>) {}

  private async fill(n: number): Promise<boolean> {
    while (this.buffered < n) {
      const r = await this.it.next();
      if (r.done) return false;
      this.chunks.push(r.value);
      this.buffered += r.value.length;
    }
    return true;
  }

  /** Exactly n bytes (n is small: a header), or null at the end of the stream. */
  async take(n: number): Promise<Uint8Array | null> {
    if (!(await this.fill(n))) return null;
    const out = new Uint8Array(n);
    let at = 0;
    while (at < n) {
      const c = this.chunks[0];
      const k = Math.min(c.length, n - at);
      out.set(c.subarray(0, k), at);
      at += k;
      if (k === c.length) this.chunks.shift();
      else this.chunks[0] = c.subarray(k);
    }
    this.buffered -= n;
    return out;
  }

  /** n bytes as they arrive, without joining them. */
  async *stream(n: number): AsyncGenerator<Uint8Array> {
    let left = n;
    while (left > 0) {
      if (!this.chunks.length && !(await this.fill(1))) throw new Error("the archive ends in the middle of a file");
      const c = this.chunks[0];
      const k = Math.min(c.length, left);
      // Book-keeping before the yield: a consumer that stops early must not leave the reader misaligned.
      left -= k;
      this.buffered -= k;
      if (k === c.length) this.chunks.shift();
      else this.chunks[0] = c.subarray(k);
      yield c.subarray(0, k);
    }
  }
}

const str = (h: Uint8Array, offset: number, width: number) => {
  const s = h.subarray(offset, offset + width);
  const end = s.indexOf(0);
  return dec.decode(end < 0 ? s : s.subarray(0, end));
};
const num = (h: Uint8Array, offset: number, width: number) => {
  const t = str(h, offset, width).trim();
  return t ? parseInt(t, 8) : 0;
};

function parsePax(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/\d+ ([^=]+)=([^\n]*)\n/g)) out[m[1]] = m[2];
  return out;
}

export type TarFile = { path: string; size: number; mode: number; mtime: number; body: AsyncGenerator<Uint8Array> };

/**
 * Yields the regular files of an archive in order. The consumer must read (or drain) each body
 * before asking for the next entry. Directory entries are skipped; links and devices are refused.
 */
export async function* readTar(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<TarFile> {
  const r = new ByteReader(chunks[Symbol.asyncIterator]());
  let override: Record<string, string> = {};
  for (;;) {
    const h = await r.take(BLOCK);
    if (!h) throw new Error("the archive ends without its end marker");
    if (h.every((b) => b === 0)) return;
    let sum = 0;
    for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : h[i];
    if (sum !== num(h, 148, 8)) throw new Error("not a tar archive (header checksum mismatch)");
    const type = String.fromCharCode(h[156] || 48);
    const size = override.size !== undefined ? Number(override.size) : num(h, 124, 12);
    const prefix = str(h, 345, 155);
    const path = override.path ?? (prefix ? `${prefix}/${str(h, 0, 100)}` : str(h, 0, 100));
    const skip = async () => {
      for await (const _ of r.stream(size + padding(size).length));
    };
    if (type === "x" || type === "L") {
      const parts: Uint8Array[] = [];
      for await (const c of r.stream(size)) parts.push(c.slice());
      await r.take(padding(size).length);
      const text = dec.decode(Buffer.concat(parts));
      override = type === "x" ? parsePax(text) : { ...override, path: text.replace(/\0+$/, "") };
      continue;
    }
    override = {};
    if (type === "g" || type === "5") {
      await skip();
      continue;
    }
    if (type !== "0" && type !== "7") throw new Error(`unsupported archive entry ${JSON.stringify(path)} (type ${type})`);
    let read = 0;
    const body = (async function* () {
      for await (const c of r.stream(size)) {
        read += c.length;
        yield c;
      }
    })();
    yield { path, size, mode: num(h, 100, 8), mtime: num(h, 136, 12), body };
    for await (const _ of r.stream(size - read + padding(size).length)); // what the consumer left unread
  }
}

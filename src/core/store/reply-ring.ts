/**
 * A one-way channel of JSON messages in shared memory, from one thread to another, read in order.
 *
 * The write thread answers through it rather than with postMessage: Bun delivers a worker's message
 * to the event loop only after its next poll for I/O, a whole turn later (~2 ms under load), while
 * the ring can be read the moment the answer is written (see WriteThread).
 *
 * Layout: two counters (bytes written and bytes read, both wrapping at 2^32), then the data area.
 * A message is its length (4 bytes), then its UTF-8 text padded to 4 bytes; a length of -1 says
 * the rest of the area is unused and the next message starts at its beginning.
 */
const WRITTEN = 0;
const READ = 1;
const HEADER_BYTES = 8;

const padded = (n: number) => 4 + ((n + 3) & ~3);

export class ReplyRing {
  private readonly counters: Int32Array;
  private readonly words: Int32Array;
  private readonly bytes: Uint8Array;
  private readonly capacity: number;

  /** `buffer`: a fresh one from `ReplyRing.create`, shared by both threads. */
  constructor(readonly buffer: SharedArrayBuffer) {
    this.counters = new Int32Array(buffer, 0, 2);
    this.capacity = buffer.byteLength - HEADER_BYTES;
    this.words = new Int32Array(buffer, HEADER_BYTES, this.capacity / 4);
    this.bytes = new Uint8Array(buffer, HEADER_BYTES, this.capacity);
  }

  /** `capacity`: a power of two, in bytes; a message must fit in it. */
  static create(capacity = 1 << 20): ReplyRing {
    return new ReplyRing(new SharedArrayBuffer(HEADER_BYTES + capacity));
  }

  /** Writes a message, waiting (this thread only) while the reader has not made room. */
  write(value: unknown): void {
    const text = new TextEncoder().encode(JSON.stringify(value));
    const size = padded(text.length);
    if (size > this.capacity) throw new Error(`a message of ${text.length} bytes does not fit in the ring`);
    let w = Atomics.load(this.counters, WRITTEN);
    let pos = w & (this.capacity - 1);
    const skip = pos + size > this.capacity ? this.capacity - pos : 0;
    for (;;) {
      const r = Atomics.load(this.counters, READ);
      if (this.capacity - ((w - r) >>> 0) >= skip + size) break;
      Atomics.wait(this.counters, READ, r, 50);
    }
    if (skip) {
      this.words[pos / 4] = -1;
      w = (w + skip) | 0;
      pos = 0;
    }
    this.words[pos / 4] = text.length;
    this.bytes.set(text, pos + 4);
    Atomics.store(this.counters, WRITTEN, (w + size) | 0);
    Atomics.notify(this.counters, WRITTEN);
  }

  /** Is there a message to read? */
  pending(): boolean {
    return Atomics.load(this.counters, WRITTEN) !== Atomics.load(this.counters, READ);
  }

  /** Every message written and not yet read, in order. */
  read(): unknown[] {
    const out: unknown[] = [];
    let r = Atomics.load(this.counters, READ);
    const w = Atomics.load(this.counters, WRITTEN);
    const decoder = new TextDecoder();
    while (r !== w) {
      const pos = r & (this.capacity - 1);
      const length = this.words[pos / 4]!;
      if (length === -1) {
        r = (r + this.capacity - pos) | 0;
        continue;
      }
      // A copy: TextDecoder does not read shared memory.
      out.push(JSON.parse(decoder.decode(this.bytes.slice(pos + 4, pos + 4 + length))));
      r = (r + padded(length)) | 0;
    }
    Atomics.store(this.counters, READ, r);
    Atomics.notify(this.counters, READ);
    return out;
  }

  /** Waits at most `ms` (blocking this thread) until something was written since `read` last returned. */
  waitForMessage(ms: number): void {
    const r = Atomics.load(this.counters, READ);
    if (Atomics.load(this.counters, WRITTEN) !== r) return;
    Atomics.wait(this.counters, WRITTEN, r, ms);
  }
}

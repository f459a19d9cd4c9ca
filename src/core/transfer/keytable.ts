/**
 * A compact map from match keys (see match.ts) to record uuids, for a million rows: keys are kept
 * as 64 bits of hash in typed arrays (open addressing) and uuids of the usual 8-4-4-4-12 hex form
 * as 16 bytes. A Map<string, string> of a million entries costs about 240 MB; this about 40 MB.
 * Two different keys of one import share all 64 bits with odds of about 1 in 30 million for a
 * million keys (n²/2^65). Hits on existing records are confirmed against the store (match.ts); a
 * collision between two new rows of one file would merge them, at those odds.
 */
const HEX = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const EMPTY = 0x7fffffff;

export class KeyTable {
  private h1 = new Uint32Array(1024);
  private h2 = new Uint32Array(1024);
  private val = new Int32Array(1024).fill(EMPTY);
  private count = 0;
  private bytes = new Uint8Array(16 * 1024);
  private compact = 0;
  private others: string[] = [];

  get size(): number {
    return this.count;
  }

  get(key: string): string | undefined {
    const [a, b] = hashes(key);
    const mask = this.val.length - 1;
    for (let i = a & mask; ; i = (i + 1) & mask) {
      const v = this.val[i];
      if (v === EMPTY) return undefined;
      if (this.h1[i] === a && this.h2[i] === b) return this.uuidAt(v);
    }
  }

  /** Adds a key; the first uuid given for a key stays. */
  set(key: string, uuid: string): void {
    if ((this.count + 1) * 2 > this.val.length) this.grow();
    const [a, b] = hashes(key);
    const mask = this.val.length - 1;
    let i = a & mask;
    for (; this.val[i] !== EMPTY; i = (i + 1) & mask) if (this.h1[i] === a && this.h2[i] === b) return;
    this.h1[i] = a;
    this.h2[i] = b;
    this.val[i] = this.store(uuid);
    this.count++;
  }

  private store(uuid: string): number {
    if (!HEX.test(uuid)) {
      this.others.push(uuid);
      return -this.others.length;
    }
    if ((this.compact + 1) * 16 > this.bytes.length) {
      const next = new Uint8Array(this.bytes.length * 2);
      next.set(this.bytes);
      this.bytes = next;
    }
    this.bytes.set(Buffer.from(uuid.replaceAll("-", ""), "hex"), this.compact * 16);
    return this.compact++;
  }

  private uuidAt(v: number): string {
    if (v < 0) return this.others[-v - 1];
    const hex = Buffer.from(this.bytes.buffer, this.bytes.byteOffset + v * 16, 16).toString("hex");
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }

  private grow(): void {
    const [h1, h2, val] = [this.h1, this.h2, this.val];
    this.h1 = new Uint32Array(val.length * 2);
    this.h2 = new Uint32Array(val.length * 2);
    this.val = new Int32Array(val.length * 2).fill(EMPTY);
    const mask = this.val.length - 1;
    for (let k = 0; k < val.length; k++) {
      if (val[k] === EMPTY) continue;
      let i = h1[k] & mask;
      while (this.val[i] !== EMPTY) i = (i + 1) & mask;
      this.h1[i] = h1[k];
      this.h2[i] = h2[k];
      this.val[i] = val[k];
    }
  }
}

const hashes = (key: string): [number, number] => [Bun.hash.xxHash32(key, 0x2545f491), Bun.hash.xxHash32(key, 0x9e3779b9)];

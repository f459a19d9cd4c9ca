/** The streaming tar writer and reader used by backup and restore (pure module). */
import { expect, test } from "bun:test";
import { readTar, writeTar, type TarEntry } from "../src/core/backup/tar";

const entry = (path: string, bytes: Uint8Array, chunk = 4096): TarEntry => ({
  path,
  size: bytes.length,
  mtime: 1_700_000_000,
  mode: 0o644,
  body: async function* () {
    for (let i = 0; i < bytes.length; i += chunk) yield bytes.subarray(i, i + chunk);
  },
});

async function collect(gen: AsyncIterable<Uint8Array>) {
  const parts: Uint8Array[] = [];
  for await (const p of gen) parts.push(p.slice());
  return Buffer.concat(parts);
}

/** Feeds the archive back in awkward pieces: the reader must not care where chunks end. */
async function* pieces(bytes: Uint8Array, sizes: number[]) {
  let at = 0;
  for (let i = 0; at < bytes.length; i++) {
    const n = sizes[i % sizes.length];
    yield bytes.subarray(at, at + n);
    at += n;
  }
}

const files: [string, Uint8Array][] = [
  ["a.txt", new TextEncoder().encode("hello")],
  ["empty", new Uint8Array(0)],
  ["exactly-one-block", new Uint8Array(512).fill(7)],
  [`deep/${"d".repeat(120)}/name-longer-than-a-hundred-bytes.bin`, new Uint8Array(70_001).map((_, i) => i % 253)],
  ["ünïcødé/файл.txt", new TextEncoder().encode("non-ASCII names travel in pax headers")],
];

test("round trip: names of any length and script, sizes across block edges, any chunking", async () => {
  const tar = await collect(writeTar(files.map(([p, b]) => entry(p, b, 1000))));
  expect(tar.length % 512).toBe(0);
  for (const sizes of [[1], [511, 513], [7, 100_000], [tar.length]]) {
    const got: [string, Uint8Array][] = [];
    for await (const f of readTar(pieces(tar, sizes))) got.push([f.path, await collect(f.body)]);
    expect(got.map(([p]) => p)).toEqual(files.map(([p]) => p));
    for (let i = 0; i < files.length; i++) expect(Buffer.compare(got[i][1], Buffer.from(files[i][1]))).toBe(0);
  }
});

test("a consumer that skips or half-reads a body does not misalign the next entry", async () => {
  const tar = await collect(writeTar(files.map(([p, b]) => entry(p, b))));
  const seen: string[] = [];
  for await (const f of readTar(pieces(tar, [300]))) {
    seen.push(f.path);
    if (f.path.startsWith("deep/")) for await (const _ of f.body) break; // read one chunk, then stop
  }
  expect(seen).toEqual(files.map(([p]) => p));
});

test("a body that yields fewer or more bytes than declared stops the writer", async () => {
  const short: TarEntry = { ...entry("x", new Uint8Array(10)), size: 20 };
  await expect(collect(writeTar([short]))).rejects.toThrow(/changed while it was archived/);
  const long: TarEntry = { ...entry("y", new Uint8Array(30)), size: 20 };
  await expect(collect(writeTar([long]))).rejects.toThrow(/grew/);
});

test("truncated archives, bad checksums and links are refused", async () => {
  const tar = await collect(writeTar([entry("a", new Uint8Array(2000))]));
  const drain = async (bytes: Uint8Array) => {
    for await (const f of readTar(pieces(bytes, [512]))) await collect(f.body);
  };
  await expect(drain(tar.subarray(0, 1024))).rejects.toThrow(/ends/);
  const bad = Buffer.from(tar);
  bad[0] ^= 1;
  await expect(drain(bad)).rejects.toThrow(/checksum/);
  const link = Bun.spawnSync(["sh", "-c", "cd \"$(mktemp -d)\" && ln -s /etc/passwd l && tar cf - l"]).stdout;
  await expect(drain(new Uint8Array(link))).rejects.toThrow(/unsupported archive entry/);
});

/**
 * `resd backup` of a live site under write load, `resd restore` elsewhere. Uploaded files are put
 * straight into DIR/data/files/ (the media upload API is being built in parallel): the backup copies
 * that folder whatever wrote it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { adminSite, cli, makeSite, serve } from "./helpers/site";

const notes = { fields: { title: { type: "text", required: true }, n: { type: "number" } } };
const work = mkdtempSync(join(tmpdir(), "resd-backup-test-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Random content, some of it larger than the stream chunks, one with a path longer than ustar's 100 bytes. */
function uploadFiles(dir: string): Record<string, Uint8Array> {
  const files: Record<string, Uint8Array> = {
    "data/files/3f/3f2a9c0d1e4b5a6978877665544332211": crypto.getRandomValues(new Uint8Array(65536)).map((_, i) => i % 251),
    "data/files/9a/9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d": new Uint8Array(3 * 1024 * 1024 + 17).map((_, i) => (i * 7919) % 256),
    [`data/files/${"w".repeat(90)}/deep/photo.bin`]: new TextEncoder().encode("RIFF....WEBP"),
    "data/files/empty": new Uint8Array(0),
  };
  for (const [rel, bytes] of Object.entries(files)) {
    mkdirSync(join(dir, rel, ".."), { recursive: true });
    writeFileSync(join(dir, rel), bytes);
  }
  // Resized copies are made again on demand: they stay out of backups.
  mkdirSync(join(dir, "data/files/cache/3f2a9c0d1e4b5a6978877665544332211"), { recursive: true });
  writeFileSync(join(dir, "data/files/cache/3f2a9c0d1e4b5a6978877665544332211/800w.webp"), "RIFF....WEBP");
  return files;
}

async function restoredRecords(dir: string, email: string) {
  const token = (await cli(dir, ["token", email])).stdout.trim();
  const server = await serve(dir);
  const res = await fetch(`${server.base}/api/v1/notes`, { headers: { authorization: `Bearer ${token}` } });
  const body = (await res.json()) as { notes: Record<string, { title: string }> };
  expect(await server.stop()).toBe(0);
  return body.notes;
}

describe("backup under write load, restore elsewhere", () => {
  let s: Awaited<ReturnType<typeof adminSite>>;
  let files: Record<string, Uint8Array>;
  beforeAll(async () => {
    s = await adminSite({ defs: { notes }, store: "sqlite" });
    files = uploadFiles(s.dir);
  });
  afterAll(async () => { await s.cleanup(); });

  test("every record committed before the backup began is restored, every file byte-identical", async () => {
    const committed: { uuid: string; at: number }[] = [];
    let writing = true;
    let seq = 0;
    const writer = async () => {
      while (writing) {
        const i = seq++;
        const r = await s.apiJson("POST", "/api/v1/notes", { title: `note ${i}`, n: i });
        expect(r.status).toBe(201);
        committed.push({ uuid: Object.keys(r.body!.notes)[0], at: performance.now() });
      }
    };
    const writers = [writer(), writer(), writer(), writer()];
    while (committed.length < 300) await Bun.sleep(20);

    const file = join(work, "live.tar.gz");
    const began = performance.now();
    const b = await cli(s.dir, ["backup", "--out", file, "--json"]);
    const ended = performance.now();
    console.log(`backup took ${(ended - began).toFixed(0)} ms while ${committed.length} records had been written`);
    writing = false;
    await Promise.all(writers);
    expect(b.stderr).toBe("");
    expect(b.code).toBe(0);
    const stats = JSON.parse(b.stdout) as { file: string; files: number; secrets: boolean };
    expect(stats).toMatchObject({ file, files: Object.keys(files).length + 1, secrets: false }); // + resources/notes.json
    expect(existsSync(`${file}.partial`)).toBe(false);

    const before = committed.filter((c) => c.at < began);
    const during = committed.filter((c) => c.at >= began && c.at <= ended);
    expect(before.length).toBeGreaterThanOrEqual(300);
    expect(during.length).toBeGreaterThan(0); // the server kept serving writes while the backup ran

    const target = join(work, "restored");
    mkdirSync(target); // empty: the harness runs the CLI inside it
    const r = await cli(target, ["restore", file]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const restored = await restoredRecords(target, s.email);
    for (const c of before) expect(restored[c.uuid]).toBeDefined();
    expect(Object.keys(restored).length).toBeLessThanOrEqual(committed.length);
    for (const [rel, bytes] of Object.entries(files)) {
      const copy = await Bun.file(join(target, rel)).bytes();
      expect(copy.length).toBe(bytes.length);
      expect(Bun.hash(copy)).toBe(Bun.hash(bytes));
    }
    expect(readdirSync(join(target, "resources"))).toEqual(["notes.json"]);
    expect(await Bun.file(join(target, "data/files/cache/3f2a9c0d1e4b5a6978877665544332211/800w.webp")).exists()).toBe(false);
    // Secrets stay out unless asked for: the restored site signs with a key of its own.
    const original = /RESD_TOKEN_SECRET=(\S+)/.exec(await Bun.file(join(s.dir, ".env")).text())![1];
    expect(await Bun.file(join(target, ".env")).text()).not.toContain(original); // generated anew on first open
  });

  test("--with-secrets carries DIR/.env (mode 0600): tokens issued by the old site stay valid", async () => {
    const file = join(work, "secrets.tar");
    const b = await cli(s.dir, ["backup", "--out", file, "--with-secrets"]);
    expect(b.code).toBe(0);
    const target = join(work, "restored-secrets");
    mkdirSync(target);
    expect((await cli(target, ["restore", file])).code).toBe(0);
    expect(await Bun.file(join(target, ".env")).text()).toBe(await Bun.file(join(s.dir, ".env")).text());
    expect(statSync(join(target, ".env")).mode & 0o777).toBe(0o600);
    const server = await serve(target);
    const res = await fetch(`${server.base}/api/v1/notes?limit=1`, { headers: { authorization: `Bearer ${s.token}` } });
    expect(res.status).toBe(200);
    expect(await server.stop()).toBe(0);
  });

  test("the archive is a plain tar that standard tools list", async () => {
    const file = join(work, "plain.tar.gz");
    expect((await cli(s.dir, ["backup", "--out", file])).code).toBe(0);
    const p = Bun.spawnSync(["tar", "tzf", file]);
    expect(p.exitCode).toBe(0);
    const names = p.stdout.toString().trim().split("\n");
    expect(names[0]).toBe("resd-backup.json");
    expect(names).toContain("data/resd.db");
    expect(names).toContain("resources/notes.json");
    for (const rel of Object.keys(files)) expect(names).toContain(rel);
    expect(names).not.toContain(".env");
  });
});

describe("restore safety", () => {
  let archive: string;
  beforeAll(async () => {
    const dir = makeSite({ defs: { notes }, store: "sqlite" });
    expect((await cli(dir, ["migrate"])).code).toBe(0);
    archive = join(work, "small.tar");
    expect((await cli(dir, ["backup", "--out", archive])).code).toBe(0);
    rmSync(dir, { recursive: true, force: true });
  });

  test("a non-empty site is refused without --force and left untouched; --force replaces its site parts", async () => {
    const target = makeSite({ defs: { other: notes }, files: { "notes.txt": "keep me" }, store: "sqlite" });
    const r = await cli(target, ["restore", archive]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("is not empty");
    expect(r.stderr).toContain("--force");
    expect(readdirSync(join(target, "resources"))).toEqual(["other.json"]);
    expect(existsSync(join(target, "data"))).toBe(false);

    const f = await cli(target, ["restore", archive, "--force"]);
    expect(f.code).toBe(0);
    expect(readdirSync(join(target, "resources"))).toEqual(["notes.json"]);
    expect(existsSync(join(target, "data", "resd.db"))).toBe(true);
    expect(await Bun.file(join(target, "notes.txt")).text()).toBe("keep me"); // not a site part: kept
    rmSync(target, { recursive: true, force: true });
  });

  test("--force into a site a running server uses is refused (exit 2, naming its PID); after it stops, it works", async () => {
    const target = makeSite({ defs: { notes }, store: "sqlite" });
    const server = await serve(target);
    const r = await cli(target, ["restore", archive, "--force"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`PID ${server.proc.pid}`);
    expect(readdirSync(join(target, "resources"))).toEqual(["notes.json"]);
    expect(existsSync(join(target, "data", "resd.db"))).toBe(true);
    // The server still answers from the database it has.
    expect((await fetch(`${server.base}/health`)).status).toBe(200);
    expect(await server.stop()).toBe(0);
    expect(existsSync(join(target, "data", "run", `${server.proc.pid}.pid`))).toBe(false);
    const again = await cli(target, ["restore", archive, "--force"]);
    expect(again.code).toBe(0);
    rmSync(target, { recursive: true, force: true });
  });

  test("a mark left by a server that died does not block a restore", async () => {
    const target = makeSite({ defs: { notes }, store: "sqlite" });
    mkdirSync(join(target, "data", "run"), { recursive: true });
    const dead = Bun.spawnSync(["true"]).pid; // exited: its PID names no process
    writeFileSync(join(target, "data", "run", `${dead}.pid`), `${dead}\n`);
    const r = await cli(target, ["restore", archive, "--force"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    rmSync(target, { recursive: true, force: true });
  });

  test("a damaged or foreign archive is refused and nothing is written", async () => {
    const bytes = await Bun.file(archive).bytes();
    const truncated = join(work, "truncated.tar");
    writeFileSync(truncated, bytes.subarray(0, Math.floor(bytes.length / 2)));
    const foreign = join(work, "foreign.tar");
    writeFileSync(join(work, "evil.txt"), "x");
    expect(Bun.spawnSync(["tar", "cf", foreign, "-C", work, "evil.txt"]).exitCode).toBe(0);
    for (const [file, message] of [[truncated, "ends"], [foreign, "not a resd backup"], [join(work, "missing.tar"), "no such file"]] as const) {
      const target = join(work, `target-${file.split("/").pop()}`);
      mkdirSync(target);
      const r = await cli(target, ["restore", file]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(message);
      expect(readdirSync(target)).toEqual([]);
    }
    expect(readdirSync(work).filter((n) => n.includes(".restore-"))).toEqual([]);
  });
});

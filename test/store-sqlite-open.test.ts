/**
 * Commands started side by side (`resd token` while `resd serve` starts, two imports from a CI
 * script) open the same database at once. The last connection to close checkpoints the WAL under an
 * exclusive lock; a process opening meanwhile must wait for it, not exit with "database is locked".
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const dir = mkdtempSync(join(tmpdir(), "resd-open-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("three processes opening and closing one database over and over: no open fails", async () => {
  const path = join(dir, "resd.db");
  const loop = () =>
    Bun.spawn([process.execPath, join(import.meta.dir, "fixtures/store-open-loop.ts"), path, "2500"], { stdout: "pipe", stderr: "pipe" });
  const procs = [loop(), loop(), loop()];
  const results = await Promise.all(
    procs.map(async (p) => {
      const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
      return { code, err, ...(JSON.parse(out.trim().split("\n").pop() || "{}") as { opens: number; failed: number }) };
    }),
  );
  for (const r of results) {
    expect(r.code).toBe(0);
    // Enough opens that closes and opens overlapped many times.
    expect(r.opens).toBeGreaterThan(50);
    expect({ failed: r.failed, first: r.err.trim() }).toEqual({ failed: 0, first: "" });
  }
}, 30_000);

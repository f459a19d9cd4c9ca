/**
 * An S3-protocol server for tests: s3rver (a dev dependency) run by Node in a process of its own, on
 * a free port of 127.0.0.1, with its data in a temporary folder. s3rver makes continuation tokens
 * (listings longer than one page) with a cipher that OpenSSL 3 keeps in its legacy provider, and
 * that Bun lacks: hence Node, with that provider.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "./site";

export type S3Server = { endpoint: string; stop(): Promise<void> };

export async function startS3(buckets: string[]): Promise<S3Server> {
  const dir = mkdtempSync(join(tmpdir(), "resd-s3rver-"));
  const args = ["-d", dir, "-a", "127.0.0.1", "-p", "0", "--silent", ...buckets.flatMap((b) => ["--configure-bucket", b])];
  const proc = Bun.spawn(["node", "--openssl-legacy-provider", join(ROOT, "node_modules/s3rver/bin/s3rver.js"), ...args], { stdout: "pipe", stderr: "pipe" });
  const reader = proc.stdout.getReader();
  let out = "";
  const deadline = Date.now() + 20_000;
  let port = "";
  while (!port && Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    out += new TextDecoder().decode(value);
    port = /listening on 127\.0\.0\.1:(\d+)/.exec(out)?.[1] ?? "";
  }
  reader.releaseLock();
  if (!port) {
    proc.kill();
    throw new Error(`s3rver did not start: ${out}${await new Response(proc.stderr).text()}`);
  }
  return {
    endpoint: `http://127.0.0.1:${port}`,
    async stop() {
      proc.kill();
      await proc.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

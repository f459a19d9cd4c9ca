import type { Command } from "commander";
import { openSite } from "../src/core/open-site";
import { startServer } from "../src/http/server";
import { renameSync, rmSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { filesOf } from "../src/core/files/context";
import { action, config } from "./common";
import { badRequest } from "../src/core/errors";

/** A port that is taken, or not ours to take, is the input's fault: said with the port, exit 2. */
function listenError(e: unknown, port: number, host: string): unknown {
  const code = (e as NodeJS.ErrnoException | null)?.code;
  if (code === "EADDRINUSE") return badRequest(`port ${port} on ${host} is in use (another resd, or another server); choose another with --port or RESD_PORT (0: any free port)`);
  if (code === "EACCES") return badRequest(`port ${port} on ${host} needs privileges this user does not have; choose one above 1023 with --port or RESD_PORT`);
  if (code === "EADDRNOTAVAIL") return badRequest(`${host} is not an address of this machine (--host or RESD_HOST)`);
  return e;
}

export function registerServe(program: Command) {
  program
    .command("serve")
    .description("start the HTTP server")
    .option("--dir <dir>", "site directory (default: current directory, or RESD_DIR)")
    .option("--port <port>", "TCP port (default 8080, or RESD_PORT)")
    .option("--host <host>", "listen address (default 0.0.0.0, or RESD_HOST)")
    .option("--log-format <format>", "request log format: json or text (default: json unless a terminal)")
    .option("--database-url <url>", "postgres://user:password@host:port/database: keep records in PostgreSQL (default: SQLite in DIR/data, or RESD_DATABASE_URL)")
    .option("--files-url <url>", "s3://bucket/prefix: uploaded files in an S3-compatible bucket (default: DIR/data/files, or RESD_FILES_URL)")
    .option("--port-file <path>", "once listening, write the port to this file (with --port 0: the one chosen); removed on shutdown")
    .action(action(async (opts: { dir?: string; port?: string; host?: string; logFormat?: string; portFile?: string; filesUrl?: string; databaseUrl?: string }) => {
      const cfg = config(opts, { port: opts.port, host: opts.host, logFormat: opts.logFormat, filesUrl: opts.filesUrl, databaseUrl: opts.databaseUrl });
      const site = await openSite(cfg);
      // A bucket that cannot be reached is said at start, not at the first upload.
      await filesOf(site).blobs.check();
      const running = await startServer(site).catch(async (e: unknown) => {
        await site.close();
        throw listenError(e, cfg.port, cfg.host);
      });
      if (opts.portFile) {
        const file = resolve(opts.portFile);
        // Written whole or not at all: a script polling for the file never reads half a number.
        writeFileSync(`${file}.tmp`, `${running.server.port}\n`);
        renameSync(`${file}.tmp`, file);
        running.onDrain(() => rmSync(file, { force: true }));
      }
    }));
}

/** `resd backup [--out FILE]`: a consistent snapshot of a (possibly running) site in one archive. */
import type { Command } from "commander";
import { resolve } from "node:path";
import { writeBackup, writeBackupFile } from "../src/core/backup/create";
import { AppError } from "../src/core/errors";
import { action, checkOutFile, config } from "./common";

type Opts = { dir?: string; out?: string; withSecrets?: boolean; json?: boolean };

/** What a PostgreSQL site uses instead (docs/scale-out.md). */
export const POSTGRES_BACKUP = "this site keeps its records in PostgreSQL (RESD_DATABASE_URL), which resd backup does not copy: " +
  "back the database up with pg_dump (or the provider's snapshots), files in a bucket with its versioning, and DIR (resources, ext, .env) as plain files; " +
  "resd export gives a portable copy of each resource";

const stamp = () => new Date().toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);

export function registerBackup(program: Command) {
  program
    .command("backup")
    .description("write a consistent snapshot of the site (database, files, definitions) while it keeps serving")
    .option("--dir <dir>", "site directory (default: current directory, or RESD_DIR)")
    .option("--out <file>", "archive to write; .tar.gz/.tgz is gzip-compressed, `-` is an uncompressed tar on stdout (default: resd-backup-<UTC time>.tar.gz)")
    .option("--with-secrets", "also store DIR/.env (token signing key, AI key) in the archive")
    .option("--json", "machine-readable result")
    .action(action(async (opts: Opts) => {
      const cfg = config(opts);
      const dir = cfg.dir;
      const secrets = Boolean(opts.withSecrets);
      // The archive holds what is on this machine; a bucket keeps its own copies (versioning).
      if (cfg.filesUrl) console.error(`resd: note: uploaded files are kept in ${cfg.filesUrl} and are not in this archive; keep them with the bucket's versioning or replication`);
      if (cfg.databaseUrl) throw new AppError(400, "INVALID_DATA", POSTGRES_BACKUP);
      if (opts.out === "-") {
        if (process.stdout.isTTY) throw new AppError(400, "INVALID_DATA", "refusing to write an archive to a terminal; redirect stdout or use --out FILE");
        const sink = Bun.stdout.writer();
        const stats = await writeBackup(dir, (c) => void sink.write(c), { secrets, gzip: false });
        await sink.end();
        console.error(`resd: backup of ${dir} written to stdout (${stats.files} files, ${stats.bytes} bytes)`);
        return;
      }
      if (opts.out) checkOutFile(opts.out);
      const file = resolve(opts.out ?? `resd-backup-${stamp()}.tar.gz`);
      const stats = await writeBackupFile(dir, file, { secrets });
      if (opts.json) console.log(JSON.stringify({ file, ...stats }));
      else console.log(`backup of ${dir} written to ${file} (${stats.files} files, database ${stats.databaseBytes} bytes, archive ${stats.bytes} bytes${secrets ? ", secrets included" : ""})`);
    }));
}

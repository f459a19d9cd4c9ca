/** `resd restore FILE --dir DIR [--force]`: a `resd backup` archive back into a site directory. */
import type { Command } from "commander";
import { restoreBackup } from "../src/core/backup/restore";
import { AppError } from "../src/core/errors";
import { existsSync } from "node:fs";
import { action, config } from "./common";

type Opts = { dir?: string; force?: boolean; json?: boolean };

export function registerRestore(program: Command) {
  program
    .command("restore <file>")
    .description("restore a backup archive (`-` reads stdin) into an empty --dir; stop the server of DIR first")
    .option("--dir <dir>", "site directory (default: current directory, or RESD_DIR)")
    .option("--force", "replace the data, definitions and extensions of a non-empty site directory")
    .option("--json", "machine-readable result")
    .action(action(async (file: string, opts: Opts) => {
      const cfg = config(opts);
      const dir = cfg.dir;
      if (cfg.databaseUrl) {
        throw new AppError(400, "INVALID_DATA", "resd restore makes a SQLite site, and this one is set to PostgreSQL (RESD_DATABASE_URL): restore without that setting, or restore the database with pg_restore");
      }
      if (file !== "-" && !existsSync(file)) throw new AppError(404, "RESOURCE_NOT_FOUND", `no such file: ${file}`);
      const source = (file === "-" ? Bun.stdin : Bun.file(file)).stream() as ReadableStream<Uint8Array>;
      const stats = await restoreBackup(source, dir, { force: Boolean(opts.force) });
      if (opts.json) console.log(JSON.stringify({ dir, ...stats }));
      else console.log(`restored ${stats.files} files and the database into ${dir} (backup of ${stats.created}${stats.secrets ? ", with its .env" : ""})`);
    }));
}

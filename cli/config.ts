/** `resd config`: the effective settings, where each came from, secrets masked. Writes nothing. */
import type { Command } from "commander";
import { describeConfig } from "../src/core/config";
import { action, config } from "./common";

type Opts = { dir?: string; json?: boolean; port?: string; host?: string; logFormat?: string };

export function registerConfig(program: Command) {
  program
    .command("config")
    .description("effective settings with their source (flag, env, .env, default), secrets masked")
    .option("--dir <dir>", "site directory (default: current directory, or RESD_DIR)")
    .option("--port <port>", "as for `resd serve`: shows what the flag would do")
    .option("--host <host>", "as for `resd serve`")
    .option("--log-format <format>", "as for `resd serve`")
    .option("--json", "machine-readable output")
    .action(action(async (opts: Opts) => {
      const rows = describeConfig(config(opts, { port: opts.port, host: opts.host, logFormat: opts.logFormat }));
      if (opts.json) {
        console.log(JSON.stringify(rows, null, 2));
        return;
      }
      const shown = rows.map((r) => ({ ...r, value: r.value === "" ? "(not set)" : r.value }));
      const w = (k: "name" | "value" | "source") => Math.max(k.length, ...shown.map((r) => r[k].length));
      const line = (a: string, b: string, c: string, d: string) => `${a.padEnd(w("name"))}  ${b.padEnd(w("value"))}  ${c.padEnd(w("source"))}  ${d}`;
      console.log(line("SETTING", "VALUE", "SOURCE", "VARIABLE"));
      for (const r of shown) console.log(line(r.name, r.value, r.source, r.env));
    }));
}

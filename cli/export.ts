import type { Command } from "commander";
import { SYSTEM } from "../src/core/access/permissions";
import { exportRecords } from "../src/core/transfer/export";
import { parseFormat, type Format } from "../src/core/transfer/format";
import { badRequest } from "../src/core/errors";
import { action, checkOutFile, withSite } from "./common";

type Opts = { dir?: string; json?: boolean; format?: string; out?: string };

/** --format, else the --out file's extension, else json. */
function formatOf(o: Opts): Format {
  if (o.format) return parseFormat(o.format);
  if (!o.out) return "json";
  const ext = /\.([A-Za-z0-9]+)$/.exec(o.out)?.[1]?.toLowerCase();
  // `--out data.xlsx` would otherwise write JSON under a name that promises something else.
  if (ext && !["json", "csv", "tsv"].includes(ext)) throw badRequest(`--out ${o.out}: resd writes json, csv or tsv, not .${ext}; name the format with --format`);
  return parseFormat(ext ?? "json");
}

export function registerExport(program: Command) {
  program
    .command("export <resource>")
    .description("export a resource as json, csv or tsv (to stdout without --out)")
    .option("--format <format>", "json, csv or tsv (default: from --out's extension, else json)")
    .option("--out <file>", "write to this file instead of stdout")
    .option("--dir <dir>", "site directory")
    .option("--json", "with --out: print what was written as JSON")
    .action(action(async (resource: string, o: Opts) => {
      const format = formatOf(o);
      if (o.out) checkOutFile(o.out);
      const written = await withSite(o, async (site) => {
        const file = exportRecords(site, SYSTEM, resource, format);
        // The file appears only once the export succeeded up to its first chunk.
        const sink = o.out ? Bun.file(o.out).writer() : Bun.stdout.writer();
        let bytes = 0;
        for await (const chunk of file.chunks) {
          bytes += Buffer.byteLength(chunk);
          await sink.write(chunk);
          await sink.flush();
        }
        await (o.out ? sink.end() : sink.flush());
        return { file: o.out ?? null, format, bytes };
      });
      if (o.out) console.log(o.json ? JSON.stringify(written) : `wrote ${written.bytes} bytes of ${format} to ${o.out}`);
    }));
}

import type { Command } from "commander";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { SYSTEM } from "../src/core/access/permissions";
import { AppError } from "../src/core/errors";
import { importRecords, type ImportProgress, type ImportResult } from "../src/core/transfer/import";
import { action, withSite } from "./common";

type Opts = { dir?: string; json?: boolean; strict?: boolean; allowErrors?: boolean; allowMissingFiles?: boolean; format?: string; match?: string | false };

/** Exit code when rows were rejected: under --strict nothing was written, otherwise the other rows were. */
export const EXIT_REJECTED = 3;

export function registerImport(program: Command) {
  program
    .command("import <resource> <file>")
    .description("import a JSON, csv or tsv file (`-` reads standard input) into a resource (same rules and stats as the HTTP import)")
    .option("--format <format>", "json, csv or tsv, when the content alone does not tell (standard input)")
    .option("--dir <dir>", "site directory")
    .option("--json", "print the stats and rejected rows as JSON")
    .option("--allow-missing-files", "accept image/file values that name no uploaded file yet (bring records before their files)")
    .option("--match <key>", "how a row finds the record it updates: uuid (only), or a unique field (after the uuid); default: uuid, then id, name, title")
    .option("--no-match", "every row creates a record; a row whose uuid exists is rejected")
    .option("--strict", `all or nothing: if any row is rejected, write nothing and exit ${EXIT_REJECTED}`)
    .option("--allow-errors", `exit 0 even when rows were rejected (the others are written); without it rejected rows exit ${EXIT_REJECTED}`)
    .action(action(async (resource: string, file: string, o: Opts) => {
      const interrupt = onInterrupt();
      try {
        await importCommand(resource, file, o, interrupt.signal);
      } catch (e) {
        if (!(e instanceof Interrupted)) throw e;
        console.error(`resd: ${e.message}`);
        process.exit(e.exitCode);
      } finally {
        interrupt.dispose();
      }
    }));
}

/** Ctrl-C or TERM during an import: the transaction rolls back, temporary files go, exit 128 + signal. */
class Interrupted extends Error {
  readonly exitCode: number;
  constructor(signal: "SIGINT" | "SIGTERM") {
    super(`interrupted by ${signal}: nothing was written`);
    this.exitCode = signal === "SIGINT" ? 130 : 143;
  }
}

/** The first signal stops the import between two rows; a second one ends the process at once. */
function onInterrupt() {
  const ctl = new AbortController();
  const on = (signal: "SIGINT" | "SIGTERM") => {
    if (ctl.signal.aborted) process.exit(signal === "SIGINT" ? 130 : 143);
    ctl.abort(new Interrupted(signal));
  };
  process.on("SIGINT", on);
  process.on("SIGTERM", on);
  return { signal: ctl.signal, dispose: () => { process.off("SIGINT", on); process.off("SIGTERM", on); } };
}

async function importCommand(resource: string, file: string, o: Opts, signal: AbortSignal) {
  if (o.format !== undefined && !["json", "csv", "tsv"].includes(o.format)) throw new AppError(400, "INVALID_DATA", `--format must be json, csv or tsv, not ${o.format}`);
  if (o.strict && o.allowErrors) throw new AppError(400, "INVALID_DATA", "give --strict or --allow-errors, not both");
  const match = o.match === false ? "none" : o.match;
  // Standard input is spooled to a temporary file: the import reads its source more than once.
  const spooled = file === "-" ? await spoolStdin(signal) : null;
  const path = spooled ?? file;
  if (!existsSync(path) || !statSync(path).isFile()) throw new AppError(400, "INVALID_DATA", `cannot read ${file}: no such file`);
  const name = o.format ? `${file === "-" ? "stdin" : basename(file)}.${o.format}` : file === "-" ? "stdin" : basename(file);
  const bar = process.stderr.isTTY ? progressBar() : null;
  let r: ImportResult;
  try {
    r = await withSite(o, (site) => importRecords(site, SYSTEM, resource, Bun.file(path), { name, strict: o.strict, allowMissingFiles: o.allowMissingFiles, match, onProgress: bar?.update, signal }));
  } finally {
    bar?.done();
    if (spooled) rmSync(join(spooled, ".."), { recursive: true, force: true });
  }
  print(r, o);
  if (r.stats.errors > 0 && !o.allowErrors) process.exitCode = EXIT_REJECTED;
}

async function spoolStdin(signal: AbortSignal): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "resd-import-"));
  const out = Bun.file(join(dir, "stdin")).writer();
  const reader = Bun.stdin.stream().getReader();
  // A pending read ends (done) when the stream is cancelled: a signal while stdin is silent.
  const cancel = () => void reader.cancel();
  signal.addEventListener("abort", cancel, { once: true });
  try {
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) out.write(chunk.value);
    await out.end();
    signal.throwIfAborted();
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  } finally {
    signal.removeEventListener("abort", cancel);
  }
  return join(dir, "stdin");
}

function print(r: ImportResult, o: Opts) {
  if (o.json) {
    console.log(JSON.stringify({ stats: r.stats, errors_detail: r.errors_detail, format: r.format, resource_created: r.resource_created, rolled_back: r.rolled_back }));
    return;
  }
  const s = r.stats;
  for (const e of r.errors_detail) console.error(`row ${e.row}${e.field ? ` ${e.field}` : ""}: ${e.reason}`);
  if (r.errors_detail.length < s.errors) console.error(`… and more: ${s.errors} rows rejected in all`);
  if (r.resource_created) console.log(`created resource from the file's _meta`);
  const matched = Object.entries(s.matched).map(([key, n]) => `${n} by ${key}`).join(", ");
  console.log(r.rolled_back
    ? `nothing imported: ${s.errors} of ${s.total} rows rejected (--strict)`
    : `imported ${s.imported} (created ${s.created}, updated ${s.updated}${matched ? `: matched ${matched}` : ""}), rejected ${s.errors}, total ${s.total}`);
}

/** One line on stderr, redrawn: phase, a bar by bytes read (or rows written), rows/s and ETA. */
function progressBar() {
  const t0 = performance.now();
  let phaseStart = t0;
  let phase = "";
  let last = 0;
  const fmt = (s: number) => (s >= 3600 ? `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m` : s >= 60 ? `${Math.floor(s / 60)}m${Math.round(s % 60)}s` : `${Math.round(s)}s`);
  return {
    update(p: ImportProgress) {
      const now = performance.now();
      if (p.phase !== phase) { phase = p.phase; phaseStart = now; }
      if (now - last < 100) return;
      last = now;
      const done = p.phase === "read" ? (p.totalBytes ? p.bytes / p.totalBytes : 0) : p.toWrite ? p.rows / p.toWrite : 0;
      const secs = (now - phaseStart) / 1000;
      const rate = secs > 0 ? Math.round(p.rows / secs) : 0;
      const eta = done > 0.01 ? fmt((secs / done) * (1 - done)) : "?";
      const width = 30;
      const fill = Math.min(width, Math.round(done * width));
      const label = p.phase === "read" ? "reading" : "writing";
      process.stderr.write(`\r${label} [${"#".repeat(fill)}${" ".repeat(width - fill)}] ${Math.round(done * 100)}% ${p.rows} rows ${rate} rows/s ETA ${eta}  `);
    },
    done() {
      process.stderr.write(`\r${" ".repeat(100)}\r`);
    },
  };
}

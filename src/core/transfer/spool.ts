/**
 * The prepared rows of an import, on disk between the two phases: validated and hashed outside the
 * transaction, then read back inside it. A file keeps memory flat for a million rows; it lives in
 * DIR/data and is removed when the import ends, committed or not.
 *
 * One line per row: `row \t kind \t by \t uuid \t created \t values-json`. JSON text never holds a
 * raw tab or newline, and neither can a uuid (see checkUuid) or a field name.
 */
import { closeSync, mkdirSync, openSync, readSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { FileSink } from "bun";
import type { Values } from "../records/prepare";

export type SpoolEntry = {
  row: number;
  /** c: create a record with `uuid`; u: update the record `uuid`. */
  kind: "c" | "u";
  /** For an update, the match key that found the record (uuid or a field name); "" for a create. */
  by: string;
  uuid: string;
  /** `_created` from the file (seconds), kept for new records. */
  created: number | null;
  values: Values;
};

const READ_CHUNK = 1 << 20;

/** Import spools are named so that a crash's leftovers can be found (see leftovers.ts). */
export const isImportSpool = (name: string) => /^import-.*\.spool$/.test(name);

export class Spool {
  readonly path: string;
  private readonly sink: FileSink;
  count = 0;

  constructor(dataDir: string) {
    mkdirSync(dataDir, { recursive: true });
    this.path = join(dataDir, `import-${crypto.randomUUID()}.spool`);
    this.sink = Bun.file(this.path).writer({ highWaterMark: READ_CHUNK });
  }

  write(e: SpoolEntry): void {
    this.sink.write(`${e.row}\t${e.kind}\t${e.by}\t${e.uuid}\t${e.created ?? ""}\t${JSON.stringify(e.values)}\n`);
    this.count++;
  }

  async finish(): Promise<void> {
    await this.sink.end();
  }

  /**
   * Reads the entries back with synchronous reads of 1 MiB: the write transaction that consumes
   * them then awaits nothing but the store.
   */
  *entries(): Generator<SpoolEntry> {
    const fd = openSync(this.path, "r");
    const buf = Buffer.allocUnsafe(READ_CHUNK);
    const decoder = new TextDecoder();
    let rest = "";
    try {
      for (;;) {
        const n = readSync(fd, buf, 0, READ_CHUNK, null);
        const text = rest + (n > 0 ? decoder.decode(buf.subarray(0, n), { stream: true }) : decoder.decode());
        const lines = text.split("\n");
        rest = lines.pop() ?? "";
        for (const line of lines) yield parseLine(line);
        if (n === 0) break;
      }
    } finally {
      closeSync(fd);
    }
  }

  remove(): void {
    rmSync(this.path, { force: true });
  }
}

function parseLine(line: string): SpoolEntry {
  const t1 = line.indexOf("\t");
  const t2 = line.indexOf("\t", t1 + 1);
  const t3 = line.indexOf("\t", t2 + 1);
  const t4 = line.indexOf("\t", t3 + 1);
  const t5 = line.indexOf("\t", t4 + 1);
  const created = line.slice(t4 + 1, t5);
  return {
    row: Number(line.slice(0, t1)),
    kind: line.slice(t1 + 1, t2) as "c" | "u",
    by: line.slice(t2 + 1, t3),
    uuid: line.slice(t3 + 1, t4),
    created: created === "" ? null : Number(created),
    values: JSON.parse(line.slice(t5 + 1)) as Values,
  };
}

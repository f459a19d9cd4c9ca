/** The spec's JSON envelope. Record bodies are assembled as text so rows are never re-parsed. */
import type { ResourceDef } from "../core/definitions/types";
import { publicRecordJson, quote } from "../core/records/output";
import type { StoredRecord } from "../core/store/types";

const JSON_TYPE = "application/json; charset=utf-8";

// Reading the resident size is a system call (~8 µs): sample it at most every 100 ms.
let memText = "";
let memAt = -Infinity;
export function memoryUsage(): string {
  const now = performance.now();
  if (now - memAt > 100) {
    memText = `${(process.memoryUsage.rss() / 1048576).toFixed(1)} MB`;
    memAt = now;
  }
  return memText;
}
export const executionTime = (t0: number) => `${(performance.now() - t0).toFixed(2)} ms`;

/** Closing keys of every envelope. */
const tail = (t0: number) => `"memory_usage":"${memoryUsage()}","execution_time":"${executionTime(t0)}"`;

export function json(status: number, body: Record<string, unknown>, t0: number, headers: Record<string, string> = {}): Response {
  const head = JSON.stringify({ code: status, success: status < 400, status: status < 400 ? "ok" : "error", ...body });
  return new Response(`${head.slice(0, -1)},${tail(t0)}}`, { status, headers: { "content-type": JSON_TYPE, ...headers } });
}

export type RecordsBody = {
  status: number;
  message?: string;
  total?: number | null;
  extra?: Record<string, unknown>;
  headers?: Record<string, string>;
};

function head(o: RecordsBody, count: number | null): string {
  let text = `"code":${o.status},"success":true,"status":"ok"`;
  if (count !== null) text += `,"count":${count}`;
  if (o.total !== undefined && o.total !== null) text += `,"total":${o.total}`;
  if (o.message) text += `,"message":${JSON.stringify(o.message)}`;
  if (o.extra) for (const [k, v] of Object.entries(o.extra)) text += `,${JSON.stringify(k)}:${JSON.stringify(v)}`;
  return text;
}

/** One record as a member of the records object: `"uuid":{…}`. */
const item = (def: ResourceDef, r: StoredRecord) => `${quote(r.uuid)}:${publicRecordJson(def, r)}`;

/**
 * The records' JSON by rows array: a cached page (see the store's page cache) shares its array
 * between answers, so its text is built once. Tied to the definition object, so a changed
 * definition (hidden fields) never reuses text built under the old one.
 */
const itemsText = new WeakMap<StoredRecord[], { def: ResourceDef; text: string }>();
function items(def: ResourceDef, rows: StoredRecord[]): string {
  // One record (mostly a read or a write's answer, built once) costs less than an entry for the GC.
  if (rows.length === 1) return item(def, rows[0]);
  const hit = itemsText.get(rows);
  if (hit && hit.def === def) return hit.text;
  const text = rows.map((r) => item(def, r)).join(",");
  itemsText.set(rows, { def, text });
  return text;
}

/** Records keyed by resource name then uuid, all in memory (reads, pages, write answers). */
export function records(def: ResourceDef, rows: StoredRecord[], o: RecordsBody, t0: number, key = def.name): Response {
  const body = `{${head(o, rows.length)},${JSON.stringify(key)}:{${items(def, rows)}},${tail(t0)}}`;
  return new Response(body, { status: o.status, headers: { "content-type": JSON_TYPE, ...o.headers } });
}

/**
 * The same shape streamed row by row, for unpaged lists: memory stays flat however many records.
 * `count` is only known at the end, so it follows the records.
 */
export function streamedRecords(def: ResourceDef, rows: AsyncIterable<StoredRecord>, o: RecordsBody, t0: number, key = def.name): Response {
  const enc = new TextEncoder();
  const it = rows[Symbol.asyncIterator]();
  let count = 0;
  let state: "head" | "rows" | "done" = "head";
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (state === "head") {
        controller.enqueue(enc.encode(`{${head(o, null)},${JSON.stringify(key)}:{`));
        state = "rows";
        return;
      }
      if (state === "done") return;
      const chunk: string[] = [];
      for (let size = 0; size < 64 * 1024; ) {
        const next = await it.next();
        if (next.done) {
          state = "done";
          break;
        }
        const text = `${count ? "," : ""}${item(def, next.value)}`;
        count++;
        size += text.length;
        chunk.push(text);
      }
      if (state === "done") chunk.push(`},"count":${count},${tail(t0)}}`);
      controller.enqueue(enc.encode(chunk.join("")));
      if (state === "done") controller.close();
    },
    async cancel() {
      await it.return?.();
    },
  });
  return new Response(stream, { status: o.status, headers: { "content-type": JSON_TYPE, ...o.headers } });
}

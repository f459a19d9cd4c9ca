/**
 * The request log and the error log. One line per request on stdout, errors with their stack on
 * stderr, as JSON lines or as text. Lines are collected and written once per event-loop turn, so
 * logging costs the hot path a string build and an array push, not a write(2) per request.
 *
 * What is logged is chosen so that no secret can reach it: the method, the path WITHOUT the query
 * string (queries carry filter values and, for some clients, tokens), the status, the duration, the
 * caller's e-mail (or "anonymous"), the request id. Never headers, bodies or queries.
 */
export type LogFormat = "json" | "text";

/** `auto` means JSON lines unless stdout is a terminal (a person is watching). */
export const resolveLogFormat = (setting: "auto" | "json" | "text"): LogFormat =>
  setting === "auto" ? (process.stdout.isTTY ? "text" : "json") : setting;

let format: LogFormat = "json";
const pending = { out: [] as string[], err: [] as string[] };
let scheduled = false;

export function setLogFormat(f: LogFormat) {
  format = f;
}

/** A path is capped and stripped of control characters so one request cannot forge log lines. */
const clean = (s: string, max = 1024) => {
  const t = s.length > max ? `${s.slice(0, max)}…` : s;
  return /[\u0000-\u001f\u007f\s"]/.test(t) ? JSON.stringify(t) : t;
};

function emit(stream: "out" | "err", line: string) {
  pending[stream].push(line);
  if (!scheduled) {
    scheduled = true;
    setImmediate(() => void flushLogs());
  }
}

/** Writes what is queued: every event-loop turn, and once more (awaited) before the process exits. */
export function flushLogs(): Promise<void> {
  scheduled = false;
  const writes: Promise<void>[] = [];
  for (const [key, stream] of [["out", process.stdout], ["err", process.stderr]] as const) {
    if (!pending[key].length) continue;
    const text = `${pending[key].join("\n")}\n`;
    pending[key] = [];
    writes.push(new Promise((resolve) => stream.write(text, () => resolve())));
  }
  return Promise.all(writes).then(() => undefined);
}

export type LogLevel = "info" | "error";

/** A service message (start, shutdown, reload) in the log's format; errors go to stderr. */
export function logEvent(message: string, fields: Record<string, string | number> = {}, level: LogLevel = "info") {
  const to = level === "error" ? "err" : "out";
  if (format === "json") emit(to, JSON.stringify({ time: new Date().toISOString(), level, msg: message, ...fields }));
  else emit(to, `${new Date().toISOString()} ${level === "error" ? "ERROR " : ""}${message}${Object.entries(fields).map(([k, v]) => ` ${k}=${clean(String(v))}`).join("")}`);
}

// Formatting a date costs more than the rest of a log line: reuse it within the same millisecond.
let isoMs = -1;
let isoText = "";
function now(): string {
  const ms = Date.now();
  if (ms !== isoMs) {
    isoMs = ms;
    isoText = new Date(ms).toISOString();
  }
  return isoText;
}

const PLAIN = /^[\w.\-/:@+~%!$&'()*,;=]*$/;
/** A JSON string literal; plain text (most paths, ids, e-mails) needs no escaping. */
const str = (s: string, max: number) => {
  const t = s.length > max ? s.slice(0, max) : s;
  return PLAIN.test(t) ? `"${t}"` : JSON.stringify(t);
};

/** The request line. `url` is the full request URL: only its path is kept, the query string never. */
export function logRequest(method: string, url: string, status: number, ms: number, user: string, id: string) {
  const start = url.startsWith("/") ? 0 : url.indexOf("/", url.indexOf("//") + 2);
  const q = url.indexOf("?", start);
  const path = start < 0 ? "/" : url.slice(start, q < 0 ? undefined : q);
  const duration = Math.round(ms * 100) / 100;
  if (format === "json") {
    emit("out", `{"time":"${now()}","method":${str(method, 16)},"path":${str(path, 1024)},"status":${status},"duration_ms":${duration},"user":${str(user, 256)},"request_id":${str(id, 64)}}`);
  } else {
    emit("out", `${now()} ${clean(method, 16)} ${clean(path)} ${status} ${duration}ms ${clean(user, 256)} ${clean(id, 64)}`);
  }
}

/** An unexpected error: once, with its stack, on stderr, under the request id the client was given. */
export function logError(requestId: string, e: unknown) {
  const err = e instanceof Error ? e : new Error(String(e));
  const stack = err.stack ?? `${err.name}: ${err.message}`;
  if (format === "json") {
    emit("err", JSON.stringify({ time: new Date().toISOString(), level: "error", request_id: requestId, error: err.message, stack }));
  } else {
    emit("err", `${new Date().toISOString()} ERROR ${requestId} ${stack}`);
  }
}

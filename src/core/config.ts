/**
 * Settings and where each came from. One precedence everywhere:
 * command-line flag > RESD_* environment variable > DIR/.env > built-in default.
 */
import { existsSync, readFileSync, mkdirSync, writeFileSync, appendFileSync, chmodSync } from "node:fs";
import { join, resolve } from "node:path";
import { randomBytes } from "node:crypto";
import { AppError } from "./errors";
import { DEFAULT_CACHE_BYTES } from "./store/memo";

export type Source = "flag" | "env" | ".env" | "default" | "generated";

type Spec<T> = {
  env: string;
  default: T;
  parse: (raw: string) => T | undefined;
  secret?: boolean;
  /** How `resd config` shows the value when part of it is secret (a password inside a URL). */
  mask?: (v: T) => string;
  help: string;
};

const int = (min: number, max = Number.MAX_SAFE_INTEGER) => (raw: string) => {
  if (!/^-?\d+$/.test(raw.trim())) return undefined;
  const n = Number(raw);
  return n >= min && n <= max ? n : undefined;
};
const str = (raw: string) => raw;
const bool = (raw: string) =>
  /^(1|true|yes|on)$/i.test(raw) ? true : /^(0|false|no|off)$/i.test(raw) ? false : undefined;
/** `s3://bucket` or `s3://bucket/prefix` (bucket names as S3 allows them); empty = local disk. */
const filesUrl = (raw: string) => (raw === "" || /^s3:\/\/[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](\/[A-Za-z0-9._\/-]*)?$/.test(raw) ? raw : undefined);
/** `postgres://user:password@host:port/database`; empty = SQLite in DIR/data. */
const databaseUrl = (raw: string) => {
  if (raw === "") return raw;
  if (!/^postgres(ql)?:\/\//.test(raw)) return undefined;
  try {
    return new URL(raw).hostname ? raw : undefined;
  } catch {
    return undefined;
  }
};
/**
 * A URL with its password masked, also when the URL is malformed (a password holding "@" or "/",
 * a scheme missing its slashes): whatever stands between the first ":" of the part before the last
 * "@" and that "@" is hidden, and so is a `password=` parameter.
 */
export function maskUrl(url: string): string {
  const query = url.replace(/([?&]password=)[^&#]*/gi, "$1***");
  const scheme = /^[a-z][a-z0-9+.-]*:\/*/i.exec(query)?.[0] ?? "";
  const rest = query.slice(scheme.length);
  const at = rest.lastIndexOf("@");
  if (at < 0) return query;
  const userinfo = rest.slice(0, at);
  const colon = userinfo.indexOf(":");
  return colon < 0 ? query : `${scheme}${userinfo.slice(0, colon)}:***${rest.slice(at)}`;
}
/** `smtp://user:password@host:port` or `smtps://…`; empty = no mail. */
const smtpUrl = (raw: string) => {
  if (raw === "") return raw;
  if (!/^smtps?:\/\//.test(raw)) return undefined;
  try {
    return new URL(raw).hostname ? raw : undefined;
  } catch {
    return undefined;
  }
};
/** `id=https://user:password@home,…`: each id an agent id, each URL http(s) with a host. */
const agentRemotes = (raw: string) => {
  if (raw.trim() === "") return "";
  for (const entry of raw.split(",")) {
    const m = /^\s*([a-z0-9][a-z0-9_-]{0,62})=(https?:\/\/\S+)\s*$/.exec(entry);
    if (!m) return undefined;
    try {
      if (!new URL(m[2]).hostname) return undefined;
    } catch {
      return undefined;
    }
  }
  return raw.trim();
};
const oneOf = <T extends string>(...values: T[]) => (raw: string) => (values as string[]).includes(raw) ? (raw as T) : undefined;

/** SQLite caps mmap_size at this (its SQLITE_MAX_MMAP_SIZE on Linux); a larger setting would silently be less. */
const SQLITE_MAX_MMAP = 2147418112;

export const SETTINGS = {
  port: { env: "RESD_PORT", default: 8080, parse: int(0, 65535), help: "TCP port of `resd serve`" } as Spec<number>,
  host: { env: "RESD_HOST", default: "0.0.0.0", parse: str, help: "address `resd serve` listens on" } as Spec<string>,
  maxUpload: { env: "RESD_MAX_UPLOAD", default: 50 * 1024 * 1024, parse: int(1), help: "largest upload in bytes" } as Spec<number>,
  bodyTimeout: { env: "RESD_BODY_TIMEOUT", default: 30, parse: int(1, 86_400), help: "seconds a request body gets to arrive, plus one second per RESD_BODY_MIN_RATE bytes it has sent; past it 408 and the connection is closed" } as Spec<number>,
  bodyMinRate: { env: "RESD_BODY_MIN_RATE", default: 8192, parse: int(1), help: "bytes per second a request body must keep up past RESD_BODY_TIMEOUT (each such many bytes received adds a second)" } as Spec<number>,
  maxBodies: { env: "RESD_MAX_BODIES", default: 1024, parse: int(1, 1_000_000), help: "request bodies being received at once; a request with a body beyond it gets 503 with Retry-After and the connection is closed" } as Spec<number>,
  tokenTtl: { env: "RESD_TOKEN_TTL", default: 600, parse: int(1), help: "bearer token lifetime in seconds after the last renewal" } as Spec<number>,
  sessionTtl: { env: "RESD_SESSION_TTL", default: 14 * 24 * 3600, parse: int(1), help: "session lifetime in seconds after the last use" } as Spec<number>,
  loginMaxFailures: { env: "RESD_LOGIN_MAX_FAILURES", default: 5, parse: int(1, 1000), help: "failed logins of one account before further attempts are refused (429)" } as Spec<number>,
  passwordMinLength: { env: "RESD_PASSWORD_MIN_LENGTH", default: 10, parse: int(1, 1024), help: "fewest characters a password may have, however it is set (API, import, CLI); 422 / exit 2 below it" } as Spec<number>,
  loginLock: { env: "RESD_LOGIN_LOCK", default: 60, parse: int(1, 86400), help: "seconds an account is locked after too many failed logins; doubles per further failure, at most one hour" } as Spec<number>,
  maxLimit: { env: "RESD_MAX_LIMIT", default: 0, parse: int(0), help: "largest `limit` a list accepts (0 = no maximum)" } as Spec<number>,
  cacheMaxBytes: { env: "RESD_CACHE_MAX_BYTES", default: DEFAULT_CACHE_BYTES, parse: int(0), help: "bytes kept in memory between the writes that change them: single records (a seventh), then list pages and totals (two thirds of the rest) and the search index's record ids per trigram (a third of the rest); 0 = no cache" } as Spec<number>,
  mmapSize: { env: "RESD_MMAP_SIZE", default: 0, parse: int(0, SQLITE_MAX_MMAP), help: "bytes of the SQLite file the server reads through memory mapping for short reads (one record, small pages); they count in the resident size as the kernel's file cache (0 = off, the default; at most 2147418112, SQLite's own limit)" } as Spec<number>,
  readWorkers: { env: "RESD_READ_WORKERS", default: 2, parse: int(0, 64), help: "worker threads that run list queries and counts off the event loop (0 = on the event loop)" } as Spec<number>,
  queryTimeout: { env: "RESD_QUERY_TIMEOUT", default: 10_000, parse: int(100, 3_600_000), help: "milliseconds a list query or count may run; past it the request gets 503 with Retry-After" } as Spec<number>,
  maxQueriesPerCaller: { env: "RESD_MAX_QUERIES_PER_CALLER", default: 8, parse: int(0, 100_000), help: "list queries and counts one caller (a user; an anonymous client by address) may have waiting for or running on the read workers (PostgreSQL: read connections); more get 429 with Retry-After; callers take turns either way (0 = no bound)" } as Spec<number>,
  corsOrigins: { env: "RESD_CORS_ORIGINS", default: "", parse: str, help: "origins (comma-separated, or *) whose browser pages may call the API with bearer tokens; empty = none" } as Spec<string>,
  publicMedia: { env: "RESD_PUBLIC_MEDIA", default: true, parse: bool, help: "serve /img and /download without permission checks" } as Spec<boolean>,
  imgMaxEdge: { env: "RESD_IMG_MAX_EDGE", default: 4096, parse: int(1, 16384), help: "largest width or height an /img spec may ask for" } as Spec<number>,
  imgMaxPixels: { env: "RESD_IMG_MAX_PIXELS", default: 50_000_000, parse: int(1), help: "largest source image (width x height) /img decodes; larger ones get 415" } as Spec<number>,
  imgConcurrency: { env: "RESD_IMG_CONCURRENCY", default: 2, parse: int(1, 64), help: "image resizes running at once (more wait; a long queue gets 503)" } as Spec<number>,
  databaseUrl: { env: "RESD_DATABASE_URL", default: "", parse: databaseUrl, mask: maskUrl, help: "postgres://user:password@host:port/database: records, users and the job queue in PostgreSQL (several instances may share it); empty = SQLite in DIR/data" } as Spec<string>,
  databaseDirectUrl: { env: "RESD_DATABASE_DIRECT_URL", default: "", parse: databaseUrl, mask: maskUrl, help: "when RESD_DATABASE_URL goes through a pooler in transaction mode (PgBouncer): a direct connection to the same database, for LISTEN (statements are then not prepared by name, and the query time budget is set per transaction)" } as Spec<string>,
  filesUrl: { env: "RESD_FILES_URL", default: "", parse: filesUrl, help: "s3://bucket[/prefix]: files in an S3-compatible bucket (endpoint, region and keys from the S3_* / AWS_* variables); empty = DIR/data/files" } as Spec<string>,
  imgMaxVariants: { env: "RESD_IMG_MAX_VARIANTS", default: 50, parse: int(0), help: "resized copies kept on disk per image; further sizes are made but not kept" } as Spec<number>,
  shutdownTimeout: { env: "RESD_SHUTDOWN_TIMEOUT", default: 10, parse: int(0, 3600), help: "seconds in-flight requests and jobs get to finish after SIGTERM/SIGINT" } as Spec<number>,
  logFormat: { env: "RESD_LOG_FORMAT", default: "auto", parse: oneOf("auto", "json", "text"), help: "request log format (auto: json unless stdout is a terminal)" } as Spec<"auto" | "json" | "text">,
  tokenSecret: { env: "RESD_TOKEN_SECRET", default: "", parse: str, secret: true, help: "HMAC key for bearer tokens (generated into DIR/.env)" } as Spec<string>,
  aiApiKey: { env: "AI_API_KEY", default: "", parse: str, secret: true, help: "key of the OpenAI-compatible provider for import-document" } as Spec<string>,
  aiBaseUrl: { env: "AI_BASE_URL", default: "https://api.openai.com/v1", parse: str, help: "base URL of the chat-completions provider" } as Spec<string>,
  aiRate: { env: "RESD_AI_RATE", default: 30, parse: int(0, 1_000_000), help: "AI provider calls (import-document, translation, completion, agent runs) one user may make per hour" } as Spec<number>,
  documentMaxUnzipped: { env: "RESD_DOCUMENT_MAX_UNZIPPED", default: 25 * 1024 * 1024, parse: int(1024), help: "largest size in bytes a .docx given to import-document may inflate to" } as Spec<number>,
  aiModel: { env: "AI_MODEL", default: "gpt-4o-mini", parse: str, help: "model name sent to the provider" } as Spec<string>,
  jobAttempts: { env: "RESD_JOB_ATTEMPTS", default: 8, parse: int(1, 100), help: "attempts of a job before it is dead-lettered" } as Spec<number>,
  jobBackoff: { env: "RESD_JOB_BACKOFF", default: 10_000, parse: int(1), help: "milliseconds before a failed job's first retry; doubles per attempt, at most one hour" } as Spec<number>,
  jobLease: { env: "RESD_JOB_LEASE", default: 300, parse: int(1), help: "seconds a running job stays claimed without a heartbeat before another worker may take it" } as Spec<number>,
  jobPoll: { env: "RESD_JOB_POLL", default: 1000, parse: int(10), help: "milliseconds between queue polls of an idle worker" } as Spec<number>,
  jobConcurrency: { env: "RESD_JOB_CONCURRENCY", default: 2, parse: int(1, 64), help: "jobs one server runs at the same time" } as Spec<number>,
  publicUrl: { env: "RESD_PUBLIC_URL", default: "", parse: (raw: string) => (/^https?:\/\/[^\s/]+(\/[^\s]*)?$/.test(raw) ? raw.replace(/\/+$/, "") : undefined), help: "public base URL for absolute links such as sitemap <loc> (default: the first of RESD_CORS_ORIGINS, else relative paths)" } as Spec<string>,
  mapTiles: { env: "RESD_MAP_TILES", default: "", parse: (raw: string) => (raw === "" || (/^(https?:\/\/[^\s]+|\/[^\s]*)$/.test(raw) && ["{z}", "{x}", "{y}"].every((t) => raw.includes(t))) ? raw : undefined), help: "map tile URL template with {z}, {x} and {y} (e.g. https://tile.example.org/{z}/{x}/{y}.png): location fields in the admin pages show a map; empty = coordinates only" } as Spec<string>,
  realtimeMaxStreams: { env: "RESD_REALTIME_MAX_STREAMS", default: 10_000, parse: int(0, 1_000_000), help: "realtime streams (/api/v1/realtime) one server holds open at once; more get 429 (0 = realtime off: 503)" } as Spec<number>,
  realtimeMaxStreamsPerUser: { env: "RESD_REALTIME_MAX_STREAMS_PER_USER", default: 20, parse: int(1, 1_000_000), help: "realtime streams one user (an anonymous client: by address) may hold open at once; more get 429" } as Spec<number>,
  realtimeBuffer: { env: "RESD_REALTIME_BUFFER", default: 1024 * 1024, parse: int(1024), help: "bytes of events a realtime stream may have waiting for a slow reader; past it the stream ends with a `close` event (reason SLOW_READER) and the client resumes with Last-Event-ID" } as Spec<number>,
  realtimeWindow: { env: "RESD_REALTIME_WINDOW", default: 10_000, parse: int(0, 1_000_000), help: "events kept for a realtime client that reconnects with Last-Event-ID (also at most five minutes); older ones get a `reset` event" } as Spec<number>,
  realtimeBulk: { env: "RESD_REALTIME_BULK", default: 100, parse: int(1, 100_000), help: "changes of one resource in one write (a bulk PUT, an import) told one by one; above it one `bulk` event is sent instead" } as Spec<number>,
  realtimeHeartbeat: { env: "RESD_REALTIME_HEARTBEAT", default: 20, parse: int(1, 3600), help: "seconds between the comment lines that keep an idle realtime stream open through proxies" } as Spec<number>,
  smtpUrl: { env: "RESD_SMTP_URL", default: "", parse: smtpUrl, mask: maskUrl, help: "smtp://user:password@host:587 (STARTTLS when the server offers it) or smtps://…:465: mail for password resets, e-mail changes and invitations (sent through the job queue); empty = no mail (admins use `resd user reset-link` / `resd user invite`)" } as Spec<string>,
  mailFrom: { env: "RESD_MAIL_FROM", default: "", parse: (raw: string) => (raw === "" || /^[^\r\n]{1,200}$/.test(raw) && /@/.test(raw) ? raw : undefined), help: "the From of resd's mails, e.g. `Example Site <noreply@example.org>` (default: noreply@ the public URL's host)" } as Spec<string>,
  siteName: { env: "RESD_SITE_NAME", default: "", parse: (raw: string) => (/^[^\r\n]{0,100}$/.test(raw) ? raw : undefined), help: "the site's name in mails and the admin (default: the public URL's host)" } as Spec<string>,
  resetTtl: { env: "RESD_RESET_TTL", default: 3600, parse: int(1, 7 * 86_400), help: "seconds a password-reset or e-mail-change link stays valid" } as Spec<number>,
  inviteTtl: { env: "RESD_INVITE_TTL", default: 7 * 86_400, parse: int(60, 90 * 86_400), help: "seconds an invitation link stays valid" } as Spec<number>,
  agentSteps: { env: "RESD_AGENT_STEPS", default: 12, parse: int(1, 200), help: "tool calls one agent run may make; past it the run stops and says so" } as Spec<number>,
  agentToolAnswer: { env: "RESD_AGENT_TOOL_ANSWER", default: 16_000, parse: int(200, 1_000_000), help: "characters of one tool answer an agent's model reads; longer answers are cut, and the model is told to ask for less" } as Spec<number>,
  agentMessages: { env: "RESD_AGENT_MESSAGES", default: 200, parse: int(2, 100_000), help: "messages kept per agent conversation (older ones are dropped; the model reads the last 60)" } as Spec<number>,
  agentRunTimeout: { env: "RESD_AGENT_RUN_TIMEOUT", default: 600, parse: int(5, 86_400), help: "seconds an agent run (or another site's agent, agent-remote) may take before it is shown as failed" } as Spec<number>,
  agentRemotes: { env: "RESD_AGENT_REMOTES", default: "", parse: agentRemotes, mask: (v: string) => v.split(",").map((e) => e.replace(/=(.*)$/, (_, url: string) => `=${maskUrl(url)}`)).join(","), help: "agents whose home is another resd site: id=https://user:password@home,… (the home user's e-mail, percent-encoded, and password; that user needs chat-<id> and agent-remote there)" } as Spec<string>,
  sitemapMaxUrls: { env: "RESD_SITEMAP_MAX_URLS", default: 50_000, parse: int(1, 50_000), help: "URLs per sitemap file; above it /sitemap.xml becomes a sitemap index" } as Spec<number>,
} as const;

export type SettingName = keyof typeof SETTINGS;
export type Settings = { [K in SettingName]: (typeof SETTINGS)[K]["default"] };

export type Config = Settings & {
  dir: string;
  sources: Record<SettingName | "dir", Source>;
};

/** Reads KEY=VALUE lines; `#` comments and surrounding quotes allowed. */
export function parseDotEnv(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const m = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (!m || line.trimStart().startsWith("#")) continue;
    let v = m[2];
    if (/^(["']).*\1$/.test(v)) v = v.slice(1, -1);
    out[m[1]] = v;
  }
  return out;
}

export function readDotEnv(dir: string): Record<string, string> {
  const file = join(dir, ".env");
  return existsSync(file) ? parseDotEnv(readFileSync(file, "utf8")) : {};
}

/**
 * The RESD_* / AI_* variables of the environment the process was started with. Bun loads the
 * working directory's .env files into process.env before any of our code runs (unless told not
 * to): with cwd = DIR that would pass DIR/.env off as environment variables, and from another
 * directory a stray .env would configure resd. On Linux /proc/self/environ still holds the
 * environment as it was at exec, so whatever Bun added is dropped again.
 */
export function launchEnv(): Record<string, string | undefined> {
  let launched: Set<string>;
  try {
    launched = new Set(readFileSync("/proc/self/environ", "latin1").split("\0").map((kv) => kv.slice(0, kv.indexOf("="))));
  } catch {
    return process.env;
  }
  const env = { ...process.env };
  for (const key of Object.keys(env)) if (/^(RESD|AI)_/.test(key) && !launched.has(key)) delete env[key];
  return env;
}

/**
 * Resolves every setting. `flags` holds raw command-line values by setting name.
 * An unparseable value stops with an error naming the setting and where it came from.
 */
export function loadConfig(opts: {
  dir?: string;
  flags?: Partial<Record<SettingName, string | number | boolean>>;
  env?: Record<string, string | undefined>;
}): Config {
  const env = opts.env ?? launchEnv();
  const dirSource: Source = opts.dir ? "flag" : env.RESD_DIR ? "env" : "default";
  const dir = resolve(opts.dir ?? env.RESD_DIR ?? ".");
  const dotenv = readDotEnv(dir);
  const values: Record<string, unknown> = { dir };
  const sources: Record<string, Source> = { dir: dirSource };
  for (const [name, spec] of Object.entries(SETTINGS) as [SettingName, Spec<unknown>][]) {
    const candidates: [Source, unknown][] = [
      ["flag", opts.flags?.[name]],
      ["env", env[spec.env]],
      [".env", dotenv[spec.env]],
    ];
    const hit = candidates.find(([, v]) => v !== undefined && v !== "");
    if (!hit) {
      values[name] = spec.default;
      sources[name] = "default";
      continue;
    }
    const parsed = spec.parse(String(hit[1]));
    if (parsed === undefined) {
      const shown = spec.secret ? "(masked)" : JSON.stringify(spec.mask ? spec.mask(String(hit[1])) : String(hit[1]));
      throw new AppError(400, "INVALID_DATA", `invalid value for ${name} (${spec.env}) from ${hit[0]}: ${shown} — ${spec.help}`);
    }
    values[name] = parsed;
    sources[name] = hit[0];
  }
  return { ...(values as Settings & { dir: string }), sources: sources as Config["sources"] };
}

export const MIN_SECRET_BYTES = 32;
/** Bits a signing key must carry by the estimate below: 128, as a random 16-byte key does. */
export const MIN_SECRET_BITS = 128;

/**
 * A low estimate of a key's entropy: its bytes' Shannon entropy times its length, or nothing when
 * the key is one short piece repeated. 32 × `a`, a word or `0123456789` repeated hold none, a
 * sentence about 124 bits; random keys from `openssl rand -base64 32` or `-hex 32` hold 180 or more.
 */
export function secretBits(secret: string): number {
  const bytes = Buffer.from(secret);
  for (let period = 1; period <= bytes.length / 2; period++) {
    let repeats = true;
    for (let i = period; i < bytes.length && repeats; i++) repeats = bytes[i] === bytes[i - period];
    if (repeats) return 0;
  }
  const counts = new Map<number, number>();
  for (const b of bytes) counts.set(b, (counts.get(b) ?? 0) + 1);
  let perByte = 0;
  for (const n of counts.values()) perByte -= (n / bytes.length) * Math.log2(n / bytes.length);
  return perByte * bytes.length;
}

/** Makes sure DIR/.env holds a token signing key of at least 32 bytes; generates one on first start. */
export function ensureTokenSecret(config: Config): Config {
  const file = join(config.dir, ".env");
  if (existsSync(file)) chmodSync(file, 0o600);
  if (config.tokenSecret) {
    // A short key can be guessed offline from one token: refuse to start with one.
    const bytes = Buffer.byteLength(config.tokenSecret);
    if (bytes < MIN_SECRET_BYTES) {
      throw new AppError(400, "INVALID_DATA", `RESD_TOKEN_SECRET (from ${config.sources.tokenSecret}) is ${bytes} bytes; it must be at least ${MIN_SECRET_BYTES} bytes (e.g. openssl rand -base64 32), or remove it from DIR/.env to have one generated`);
    }
    // A long key of few different bytes is as guessable as a short one.
    const bits = secretBits(config.tokenSecret);
    if (bits < MIN_SECRET_BITS) {
      throw new AppError(400, "INVALID_DATA", `RESD_TOKEN_SECRET (from ${config.sources.tokenSecret}) is too regular to be a secret (about ${Math.floor(bits)} bits; at least ${MIN_SECRET_BITS} needed): use random bytes, e.g. openssl rand -base64 32, or remove it from DIR/.env to have one generated`);
    }
    return config;
  }
  mkdirSync(config.dir, { recursive: true });
  const secret = randomBytes(32).toString("base64url");
  const prefix = existsSync(file) && !readFileSync(file, "utf8").endsWith("\n") ? "\n" : "";
  if (existsSync(file)) appendFileSync(file, `${prefix}RESD_TOKEN_SECRET=${secret}\n`, { mode: 0o600 });
  else writeFileSync(file, `# resd secrets — keep out of version control\nRESD_TOKEN_SECRET=${secret}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return { ...config, tokenSecret: secret, sources: { ...config.sources, tokenSecret: "generated" } };
}

/** The effective configuration for display, secrets masked. */
export function describeConfig(config: Config): { name: string; env: string; value: string; source: Source }[] {
  const rows = [{ name: "dir", env: "RESD_DIR", value: config.dir, source: config.sources.dir }];
  for (const [name, spec] of Object.entries(SETTINGS) as [SettingName, Spec<unknown>][]) {
    const v = String(config[name]);
    const shown = spec.secret && v ? `${v.slice(0, 2)}…(masked)` : spec.mask ? spec.mask(config[name]) : v;
    rows.push({ name, env: spec.env, value: shown, source: config.sources[name] });
  }
  return rows;
}

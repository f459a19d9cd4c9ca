/**
 * The realtime hub of one server: its streams, the ids of the changes it tells them, the window a
 * client that reconnects resumes from, and the checks that keep a stream to what its caller may
 * see. Knows nothing of HTTP: a stream is an `Outlet` that text is written to (src/http/realtime.ts
 * makes it a Server-Sent Events response).
 *
 * - Ids: every change told here gets the next number; the SSE id is `<instance>-<number>`, so that
 *   a client coming back to another instance, or to this one after a restart, is told `reset`
 *   rather than resumed from someone else's numbers.
 * - Order: changes are told in the order they committed in this process (and as they arrived from
 *   other instances). A change to `users` or `roles` first has every stream's caller worked out
 *   again, so that nothing after it reaches someone who lost the right to see it.
 * - Bounds: streams in all and per caller. A stream holds at most its buffer of events waiting for
 *   its reader; a reader slower than that falls behind and is told the rest from the window as it
 *   reads (a resumed stream catches up the same way). One that falls out of the window is ended
 *   with a `close` event: memory stays bounded by the buffers and the one shared window.
 */
import { randomBytes } from "node:crypto";
import { can, type Principal } from "../access/permissions";
import { AppError, notFound } from "../errors";
import { publicRecord, quote } from "../records/output";
import type { ResourceDef } from "../definitions/types";
import type { Change, Site } from "../site";
import { parseSubscription, parseSubscriptions, type Subscription } from "./subscription";

/** Where a stream's text goes. */
export type Outlet = {
  /** Adds UTF-8 for the reader to what `flush` sends. */
  write(chunk: Uint8Array): void;
  /** Sends what was written since the last flush, as one piece (one socket write). */
  flush(): void;
  /** The stream's buffer is full (what is written but not flushed included): what follows waits. */
  full(): boolean;
  /** `fn` is called whenever the reader took some of what was waiting. */
  onDrain(fn: () => void): void;
  /** Ends the stream after what was queued. */
  end(): void;
};

export type StreamRequest = {
  principal: Principal;
  /** Whom the stream counts against for the per-caller bound (a user, an anonymous client's address). */
  owner: string;
  subscriptions: Subscription[];
  /** The caller worked out again from the same credentials (throws 401 when they no longer hold). */
  reauth: () => Promise<Principal>;
  /** The id of the last event the client saw (Last-Event-ID), if it resumes. */
  lastEventId: string | null;
  out: Outlet;
};

/**
 * A change told here: `record` is its record as JSON, and `frames` its events as streams get them
 * (by event and subscription), each encoded once however many streams are told it.
 */
type Entry = {
  id: number;
  at: number;
  change: Change;
  record: string;
  frames?: Map<string, Uint8Array>;
  bytes: number;
  /** The definition `record` was cut to (hidden fields): one changed since is applied before telling. */
  def?: ResourceDef;
};

/** The shortest time between two turns of telling the streams (see Hub.schedule). */
const COALESCE_MS = 20;
/** An entry keeps its encoded events up to this many times its record's size. */
const FRAMES_KEPT = 4;
/** Bytes of records the window keeps at most, besides its count and age. */
const WINDOW_BYTES = 64 * 1024 * 1024;

export type Stream = {
  readonly id: string;
  principal: Principal;
  readonly owner: string;
  subscriptions: Subscription[];
  /** The last change id this stream was told (or passed over). */
  seen: number;
  /** Its buffer filled: it is told what follows from the window as its reader reads. */
  behind: boolean;
  readonly reauth: () => Promise<Principal>;
  readonly out: Outlet;
  closed: boolean;
};

export type HubOptions = {
  maxStreams: number;
  maxPerOwner: number;
  window: number;
  windowMs: number;
  heartbeatMs: number;
  /** How often callers are worked out again (a sign-out, an expired session, changed allows). */
  recheckMs: number;
  /** How often another process's commits are looked for (SQLite: a command's import). */
  pollMs: number;
};

export type CloseReason = "SLOW_READER" | "UNAUTHORIZED" | "SHUTDOWN";

const ACCOUNTS = new Set(["users", "roles"]);
const encoder = new TextEncoder();
const frame = (sseId: string, event: string, data: string) => encoder.encode(`id: ${sseId}\nevent: ${event}\ndata: ${data}\n\n`);
const PING = encoder.encode(": ping\n\n");

export class Hub {
  /** Names this process's ids (see the file's comment). */
  readonly instance = randomBytes(6).toString("hex");
  private readonly streams = new Map<string, Stream>();
  private readonly perOwner = new Map<string, number>();
  /** The last id given to a change. */
  private last = 0;
  /** Changes kept for resuming, oldest first (`head` is the oldest). */
  private ring: Entry[] = [];
  private head = 0;
  private ringBytes = 0;
  /** When a stream last went away: a client can resume within the window after it. */
  private lastGone = -Infinity;
  /** Changes not yet told to the streams, and the last id told. */
  private queue: Entry[] = [];
  private told = 0;
  private pumping = false;
  /** Per subscribed resource, its last change as last seen (SQLite: another process's commits). */
  private readonly known = new Map<string, number>();
  private version: number;
  private readonly timers: ReturnType<typeof setInterval>[] = [];
  private detach: () => void = () => {};
  private unlisten: () => Promise<void> = async () => {};

  constructor(private readonly site: Site, private readonly opts: HubOptions) {
    this.version = site.store.version();
  }

  /** Starts hearing changes (this process's, and other instances' on PostgreSQL). */
  async start(): Promise<void> {
    this.detach = this.site.feed.attach((changes) => this.publish(changes));
    this.unlisten = await this.site.feed.listen(
      async (resource, uuid) => {
        const def = this.site.served(resource);
        const row = def && (await this.site.store.get(resource, uuid));
        return def && row ? publicRecord(def, row) : null;
      },
      () => this.missed(),
    );
    const every = (ms: number, fn: () => void) => {
      const t = setInterval(fn, ms);
      t.unref();
      this.timers.push(t);
    };
    every(this.opts.heartbeatMs, () => this.heartbeat());
    every(this.opts.recheckMs, () => void this.recheck());
    if (!this.site.store.bus) every(this.opts.pollMs, () => void this.poll());
  }

  /** Ends every stream (shutdown): clients reconnect to whichever instance serves next. */
  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.detach();
    await this.unlisten();
    for (const s of [...this.streams.values()]) this.close(s, "SHUTDOWN");
  }

  /** Opens a stream: checks the bounds, says `connect` (and `reset` or what was missed when resuming). */
  open(req: StreamRequest): Stream {
    if (this.streams.size >= this.opts.maxStreams) {
      throw new AppError(429, "TOO_MANY_REQUESTS", `this server holds its most realtime streams (RESD_REALTIME_MAX_STREAMS ${this.opts.maxStreams})`, { retryAfter: 30 });
    }
    const mine = this.perOwner.get(req.owner) ?? 0;
    if (mine >= this.opts.maxPerOwner) {
      throw new AppError(429, "TOO_MANY_REQUESTS", `you hold ${mine} realtime streams already (RESD_REALTIME_MAX_STREAMS_PER_USER ${this.opts.maxPerOwner}); close one first`, { retryAfter: 30 });
    }
    const s: Stream = {
      id: randomBytes(16).toString("base64url"),
      principal: req.principal,
      owner: req.owner,
      subscriptions: req.subscriptions,
      // Changes committed before it opened are not its: those still queued are passed over.
      seen: this.last,
      behind: false,
      reauth: req.reauth,
      out: req.out,
      closed: false,
    };
    this.streams.set(s.id, s);
    this.perOwner.set(req.owner, mine + 1);
    this.watch(s.subscriptions);
    const resumed = req.lastEventId === null ? null : this.resumeFrom(req.lastEventId);
    // A resumed stream's events so far carry the id it resumes from: should it break again while
    // catching up, the client's Last-Event-ID still names what it has.
    if (typeof resumed === "number") s.seen = resumed;
    this.send(s, "connect", JSON.stringify({ client_id: s.id, id: s.seen, subscriptions: s.subscriptions.map((x) => x.text) }));
    if (typeof resumed === "string") this.send(s, "reset", JSON.stringify({ id: s.seen, reason: resumed }));
    s.out.onDrain(() => this.catchUp(s));
    if (typeof resumed === "number") {
      s.behind = true;
      this.catchUp(s);
    }
    return s;
  }

  /** Replaces a stream's subscriptions (POST /api/v1/realtime/{client_id}); only its own caller may. */
  resubscribe(clientId: string, p: Principal, texts: string[]): Stream {
    const s = this.streams.get(clientId);
    if (!s || s.closed) throw notFound(`no open realtime stream ${clientId}`);
    if (s.principal.kind !== p.kind || s.principal.uuid !== p.uuid) throw new AppError(403, "ACCESS_DENIED", "the stream belongs to another caller");
    s.subscriptions = parseSubscriptions(this.site, p, texts);
    this.watch(s.subscriptions);
    return s;
  }

  /** The client went away (its connection closed). */
  gone(s: Stream): void {
    if (s.closed) return;
    s.closed = true;
    this.lastGone = Date.now();
    this.streams.delete(s.id);
    const n = (this.perOwner.get(s.owner) ?? 1) - 1;
    if (n > 0) this.perOwner.set(s.owner, n);
    else this.perOwner.delete(s.owner);
  }

  private close(s: Stream, reason: CloseReason, message?: string): void {
    if (s.closed) return;
    this.send(s, "close", JSON.stringify(message ? { reason, message } : { reason }));
    s.out.end();
    this.gone(s);
  }

  /**
   * Where a client resumes: the id after which it missed changes, or why it cannot (the id is
   * another instance's or process's, or older than the window).
   */
  private resumeFrom(lastEventId: string): number | string {
    const m = /^([A-Za-z0-9_-]+)-(\d{1,15})$/.exec(lastEventId.trim());
    if (!m || m[1] !== this.instance) return "the id is not one of this server's (another instance, or it restarted)";
    const id = Number(m[2]);
    if (id > this.last) return "the id is not one of this server's";
    this.prune();
    const oldest = this.ring.length > this.head ? this.ring[this.head].id : this.last + 1;
    if (id < oldest - 1) return "the changes after it are no longer kept (RESD_REALTIME_WINDOW, five minutes)";
    return id;
  }

  /** The entry after `id`: null when there is none yet, "lost" when the window no longer holds it. */
  private entryAfter(id: number): Entry | null | "lost" {
    if (id >= this.last) return null;
    if (this.head >= this.ring.length) return "lost";
    const i = this.head + (id + 1 - this.ring[this.head].id);
    return i < this.head ? "lost" : (this.ring[i] ?? null);
  }

  private prune(): void {
    const since = Date.now() - this.opts.windowMs;
    const ring = this.ring;
    while (this.head < ring.length && (ring.length - this.head > this.opts.window || ring[this.head].at < since || this.ringBytes > WINDOW_BYTES)) {
      this.ringBytes -= ring[this.head].bytes;
      this.head++;
    }
    // The dropped head is cut away now and then, not on every change.
    if (this.head > 1024 && this.head * 2 > ring.length) {
      this.ring = ring.slice(this.head);
      this.head = 0;
    }
  }

  /** Committed changes get their ids (in order) and are told to the streams. */
  publish(changes: Change[]): void {
    const at = Date.now();
    // No stream open, and none went away within the window: no one can resume, so nothing is kept
    // (what the window held is older than the window by now). The changes only use up their ids;
    // a stream opened later is told from the next one. A site without streams saves the encoding
    // of every write's record.
    if (this.streams.size === 0 && at - this.lastGone > this.opts.windowMs) {
      this.last += changes.length;
      this.ring = [];
      this.head = 0;
      this.ringBytes = 0;
      return;
    }
    for (const change of changes) {
      const def = this.site.served(change.resource) ?? undefined;
      if (def && "record" in change) cut(def, change);
      const record = "record" in change ? JSON.stringify(change.record) : "";
      const e: Entry = { id: ++this.last, at, change, record, bytes: record.length, def };
      if (this.opts.window > 0) {
        this.ring.push(e);
        this.ringBytes += e.bytes;
      }
      this.queue.push(e);
    }
    this.prune();
    this.schedule();
  }

  private pumpTimer: ReturnType<typeof setTimeout> | null = null;
  private lastPump = -Infinity;
  /**
   * Tells what is queued at once when the last turn was a while ago, else when `COALESCE_MS` since
   * it have passed: what changed meanwhile goes to each stream as one socket write. Each write
   * costs some microseconds, so a thousand streams told every change one by one cost the server
   * ~4-9 ms per change; in turns, changes that come faster share their writes. (Spacing turns by
   * how long the last one took was tried: with 1,000 streams the bursts it made filled every
   * stream's buffer, and readers fell behind for good; docs/realtime.md, "Measured".)
   */
  private schedule(): void {
    if (this.pumpTimer || this.pumping) return;
    const wait = Math.max(0, this.lastPump + COALESCE_MS - performance.now());
    this.pumpTimer = setTimeout(() => {
      this.pumpTimer = null;
      this.lastPump = performance.now();
      void this.pump();
    }, wait);
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.queue.length) {
        // Whoever may no longer see what follows a change of an account or a role is known first.
        if (ACCOUNTS.has(this.queue[0].change.resource) && this.streams.size) await this.recheck(true);
        // The changes up to the next one of an account, told as one write per stream.
        let n = 0;
        while (n < this.queue.length && (n === 0 || !ACCOUNTS.has(this.queue[n].change.resource))) n++;
        const turn = this.queue.splice(0, n);
        // Told before the streams are written: a stream's reader may take what it has at once and
        // ask for more (catchUp), which must then find this turn's changes told, not still to come.
        this.told = turn[turn.length - 1].id;
        for (const s of this.streams.values()) {
          // One behind whose reader took what waited goes on from the window here too, should the
          // stream not have asked (pull) for more.
          if (s.behind && !s.out.full()) this.catchUp(s);
          for (const e of turn) if (!s.behind && !this.tell(s, e)) s.behind = true;
          s.out.flush();
        }
      }
      // A stream behind by more than the window can no longer catch up.
      for (const s of this.streams.values()) if (s.behind && this.entryAfter(s.seen) === "lost") this.lost(s);
    } finally {
      this.pumping = false;
    }
  }

  private lost(s: Stream): void {
    this.close(s, "SLOW_READER", "the stream's reader fell behind by more than the window (RESD_REALTIME_WINDOW, five minutes); resume with Last-Event-ID, which answers reset");
  }

  /** A stream behind is told what follows from the window while its buffer has room. */
  private catchUp(s: Stream): void {
    while (s.behind && !s.closed) {
      const e = this.entryAfter(s.seen);
      if (e === "lost") return this.lost(s);
      if (e === null || e.id > this.told) {
        s.behind = false;
        break;
      }
      if (!this.tell(s, e)) break;
    }
    s.out.flush();
  }

  /**
   * One change to one stream: once per way its subscriptions see it (an update to one, a create to
   * a filtered one it came into), naming the subscriptions that see it so. Nothing is written to a
   * stream whose buffer is full (false): it is told this change from the window as its reader reads.
   */
  private tell(s: Stream, e: Entry): boolean {
    if (s.closed || e.id <= s.seen) return true;
    if (s.out.full()) return false;
    s.seen = e.id;
    this.refresh(s);
    const c = e.change;
    if (!this.current(e)) return true;
    const subs = s.subscriptions;
    // Most streams have one subscription: told without gathering ways.
    if (subs.length === 1) {
      const way = this.way(s.principal, subs[0], c);
      if (way) this.tellOnce(s, e, way, subs[0].text, subs[0].named);
      return !s.out.full();
    }
    const ways = new Map<string, string[]>();
    for (const sub of subs) {
      const way = this.way(s.principal, sub, c);
      if (way) ways.get(way)?.push(sub.text) ?? ways.set(way, [sub.text]);
    }
    for (const [way, texts] of ways) this.tellOnce(s, e, way, texts[0], JSON.stringify(texts));
    return !s.out.full();
  }

  /** How a subscription sees a change: its event ("bulk uncounted": a bulk without its count), or null. */
  private way(p: Principal, sub: Subscription, c: Change): string | null {
    if (sub.resource !== c.resource) return null;
    if (c.action === "bulk") {
      // How many changed is the resource's business: told only to who may view all of it.
      return can(p, c.resource, "view") ? "bulk" : sub.uuid !== null && can(p, c.resource, "view", sub.uuid) ? "bulk uncounted" : null;
    }
    if (sub.uuid !== null && sub.uuid !== c.uuid) return null;
    if (!can(p, c.resource, "view", c.uuid)) return null;
    return sub.filter ? filtered(c, sub.filter) : c.action;
  }

  /**
   * One event of a change, built and encoded once for every stream whose subscriptions see it the
   * same way (`first`, and `texts`: all their texts as a JSON array); kept with the change up to a few times its
   * record's size (distinct filters of many streams are built each time rather than kept).
   */
  private tellOnce(s: Stream, e: Entry, way: string, first: string, texts: string): void {
    const key = `${way} ${texts}`;
    let bytes = e.frames?.get(key);
    if (!bytes) {
      const c = e.change;
      const named = `"subscription":${JSON.stringify(first)},"subscriptions":${texts}`;
      const action = c.action === "bulk" ? "bulk" : way;
      const data = c.action === "bulk"
        ? `{"id":${e.id},"action":"bulk","resource":${quote(c.resource)},"count":${way === "bulk" ? (c.count ?? "null") : "null"},${named}}`
        : `{"id":${e.id},"action":"${action}","resource":${quote(c.resource)},"uuid":${quote(c.uuid)},${named},"record":${e.record},"_modified":${c.modified},"_modified_by":${quote(c.by)}}`;
      bytes = frame(`${this.instance}-${e.id}`, action, data);
      if (e.bytes + bytes.length <= FRAMES_KEPT * (e.record.length + 1024)) {
        (e.frames ??= new Map()).set(key, bytes);
        this.grow(e, bytes.length);
      }
    }
    s.out.write(bytes);
  }

  /** Adds to an entry's bytes, and to the window's when the window holds it. */
  private grow(e: Entry, by: number): void {
    e.bytes += by;
    if (this.head < this.ring.length && e.id >= this.ring[this.head].id) this.ringBytes += by;
  }

  /**
   * The change as the definition in force shows it: a field hidden since it was written is taken
   * out (a client resuming into older changes never sees it). False when the resource is gone.
   */
  private current(e: Entry): boolean {
    const c = e.change;
    if (c.action === "bulk") return true;
    const def = this.site.served(c.resource);
    if (!def) return false;
    if (def === e.def) return true;
    cut(def, c);
    const record = JSON.stringify(c.record);
    this.grow(e, record.length - e.bytes);
    e.record = record;
    e.frames = undefined;
    e.def = def;
    return true;
  }

  /**
   * Subscriptions of a resource whose definition changed since they were made are made anew (a
   * filter matches by the field types in force); one that no longer can be ends with `unsubscribed`.
   */
  private refresh(s: Stream): void {
    if (s.subscriptions.every((sub) => this.site.served(sub.resource) === sub.def)) return;
    const kept: Subscription[] = [];
    for (const sub of s.subscriptions) {
      if (this.site.served(sub.resource) === sub.def) {
        kept.push(sub);
        continue;
      }
      try {
        kept.push(parseSubscription(this.site, s.principal, sub.text));
      } catch (err) {
        const reason = err instanceof AppError ? err.code : "INVALID_DATA";
        this.send(s, "unsubscribed", JSON.stringify({ subscription: sub.text, reason, ...(err instanceof AppError && err.details ? { message: err.details } : {}) }));
      }
    }
    s.subscriptions = kept;
  }

  /** Writes one event under the stream's position; false once its buffer is full. */
  private send(s: Stream, event: string, data: string): boolean {
    if (s.closed) return false;
    s.out.write(frame(`${this.instance}-${s.seen}`, event, data));
    s.out.flush();
    return !s.out.full();
  }

  private heartbeat(): void {
    for (const s of this.streams.values()) {
      if (s.behind && !s.out.full()) this.catchUp(s);
      if (s.behind || s.out.full()) continue;
      s.out.write(PING);
      s.out.flush();
    }
  }

  private rechecking: Promise<void> | null = null;
  /**
   * Works every stream's caller out again; drops subscriptions it may no longer see, ends streams
   * whose credentials ended. `fresh`: a check begun before now does not do (an account changed).
   */
  async recheck(fresh = false): Promise<void> {
    if (fresh && this.rechecking) await this.rechecking;
    return (this.rechecking ??= this.recheckAll().finally(() => (this.rechecking = null)));
  }

  private async recheckAll(): Promise<void> {
    await Promise.all([...this.streams.values()].map(async (s) => {
      let p: Principal;
      try {
        p = await s.reauth();
      } catch (e) {
        this.close(s, "UNAUTHORIZED", e instanceof AppError && e.details ? e.details : "the credentials no longer hold");
        return;
      }
      if (p.kind !== s.principal.kind || p.uuid !== s.principal.uuid) {
        this.close(s, "UNAUTHORIZED", "the session ended (signed out, expired, or the user was deleted)");
        return;
      }
      s.principal = p;
      const kept: Subscription[] = [];
      for (const sub of s.subscriptions) {
        const served = this.site.served(sub.resource) !== null;
        if (served && can(p, sub.resource, "view", sub.uuid ?? undefined)) kept.push(sub);
        else {
          const reason = served ? "ACCESS_DENIED" : "RESOURCE_NOT_FOUND";
          this.send(s, "unsubscribed", JSON.stringify({ subscription: sub.text, reason }));
        }
      }
      if (kept.length !== s.subscriptions.length) s.subscriptions = kept;
    }));
  }

  /** Resources some stream subscribes to: their last change is remembered (another process's commits). */
  private watch(subs: Subscription[]): void {
    if (this.site.store.bus) return;
    for (const sub of subs) {
      if (this.known.has(sub.resource)) continue;
      this.known.set(sub.resource, Number.POSITIVE_INFINITY);
      void this.site.store.lastChange(sub.resource).then((ms) => this.known.set(sub.resource, ms), () => this.known.delete(sub.resource));
    }
  }

  /**
   * SQLite: another process (a command's import) committed. Its writes are not told one by one: a
   * resource some stream watches whose last change moved gets a `bulk` change. This process's own
   * writes since the last look may move it too; such a `bulk` is one reload too many, never a miss.
   */
  private async poll(): Promise<void> {
    const v = this.site.store.version();
    if (v === this.version) return;
    this.version = v;
    if (!this.streams.size) return;
    const changed: Change[] = [];
    for (const [resource, was] of this.known) {
      const now = await this.site.store.lastChange(resource).catch(() => was);
      if (now !== was) changed.push({ resource, action: "bulk", count: null });
      this.known.set(resource, now);
    }
    await this.recheck(true);
    if (changed.length) this.publish(changed);
  }

  /** Changes of other instances may have been missed (PostgreSQL's listening connection was lost). */
  private missed(): void {
    const subscribed = new Set<string>();
    for (const s of this.streams.values()) for (const sub of s.subscriptions) subscribed.add(sub.resource);
    void this.recheck();
    this.publish([...subscribed].map((resource) => ({ resource, action: "bulk", count: null })));
  }
}

/**
 * What a change is to a filtered subscription: the records it matches are a set, so a record that
 * comes to match is a `create` for it (a restore stays a `restore`), one that stops matching a
 * `delete`, one that matched neither before nor after nothing (null).
 */
function filtered(c: Extract<Change, { uuid: string }>, matches: (r: Record<string, unknown>) => boolean): string | null {
  const before = c.previous === undefined ? undefined : c.previous !== null && matches(c.previous);
  if (c.action === "delete") return before === false ? null : "delete";
  const now = matches(c.record);
  if (!now) return before === false ? null : "delete";
  if (before === false && c.action === "update") return "create";
  return c.action;
}

/** Takes out of a change's record (and what it was before) the fields `def` hides. */
function cut(def: ResourceDef, c: Extract<Change, { uuid: string }>): void {
  for (const h of def.hidden) {
    delete c.record[h];
    if (c.previous) delete c.previous[h];
  }
}

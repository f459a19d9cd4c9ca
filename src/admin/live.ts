/**
 * Changes to records as they happen: one EventSource on `/api/v1/realtime` per page that shows
 * records (the overview, the form), closed when the page goes. The browser reconnects by itself
 * and the server resumes from Last-Event-ID; a stream the server refused (429 too many streams,
 * 503 realtime off, 401) is opened again after a while, and meanwhile `open(false)` lets the page
 * fall back to asking now and then.
 */

/** One record's change, as the server tells it (`record` as the API returns it). */
export type Change = {
  id: number;
  action: "create" | "update" | "delete" | "restore";
  resource: string;
  uuid: string;
  subscription: string;
  record: Record<string, unknown>;
  _modified: number;
  _modified_by: string | null;
};

export type LiveHandlers = {
  /** One record changed. */
  change?: (c: Change) => void;
  /**
   * What the page shows may be out of date as a whole: many records changed (`bulk`), the server
   * could not resume (`reset`), a subscription was dropped, or the stream came back after a break.
   */
  stale?: () => void;
  /** The stream is open (true) or not (false: changes may go unseen until it is again). */
  open?: (open: boolean) => void;
};

export type Live = {
  /** Settled once the stream is open, failed, or took more than READY_MS: load what the page shows then. */
  ready: Promise<void>;
  close(): void;
};

/** How long a page waits for the stream before loading anyway. */
const READY_MS = 2000;
/** How long after the server refused a stream it is asked again (its 429 says 30 s). */
const REOPEN_MS = 30_000;

/**
 * Subscribes to `subscribe` (`notes`, `notes/<uuid>`; src/http/realtime.ts). Changes that commit
 * after `ready` settled on an open stream are all told: a page that loads after `ready` misses
 * none.
 */
export function live(subscribe: string[], on: LiveHandlers): Live {
  let source: EventSource | null = null;
  let reopen: ReturnType<typeof setTimeout> | undefined;
  let lastId = "";
  let connected = false;
  let closed = false;
  let settle!: () => void;
  const ready = new Promise<void>((resolve) => (settle = resolve));
  const readyTimer = setTimeout(() => settle(), READY_MS);

  const parse = (e: Event): Record<string, unknown> | null => {
    const m = e as MessageEvent<string>;
    if (m.lastEventId) lastId = m.lastEventId;
    try {
      return JSON.parse(m.data) as Record<string, unknown>;
    } catch {
      return null;
    }
  };

  const open = () => {
    const q = new URLSearchParams({ subscribe: subscribe.join(",") });
    // A new EventSource sends no Last-Event-ID of its own: the parameter resumes where the last one stopped.
    if (lastId) q.set("last_event_id", lastId);
    const es = (source = new EventSource(`/api/v1/realtime?${q}`, { withCredentials: true }));
    es.addEventListener("connect", (e) => {
      parse(e);
      // The first connect is the page's start (it loads after `ready`); any later one follows a break.
      if (connected) on.stale?.();
      connected = true;
      clearTimeout(readyTimer);
      settle();
      on.open?.(true);
    });
    for (const action of ["create", "update", "delete", "restore"]) {
      es.addEventListener(action, (e) => {
        const data = parse(e);
        if (data) on.change?.(data as Change);
      });
    }
    for (const name of ["bulk", "reset", "unsubscribed"]) {
      es.addEventListener(name, (e) => {
        parse(e);
        on.stale?.();
      });
    }
    es.onerror = () => {
      on.open?.(false);
      if (es.readyState !== EventSource.CLOSED) return; // the browser tries again by itself
      settle();
      if (!closed) reopen = setTimeout(open, REOPEN_MS);
    };
  };

  open();
  return {
    ready,
    close() {
      closed = true;
      clearTimeout(readyTimer);
      clearTimeout(reopen);
      source?.close();
      settle();
    },
  };
}

/**
 * `fn` once, `ms` after the first of a burst of calls; calls until then join it. Unlike a debounce,
 * a steady trickle of changes still runs `fn` every `ms`.
 */
export function batched(fn: () => void, ms: number): { (): void; cancel(): void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const call = () => {
    timer ??= setTimeout(() => {
      timer = undefined;
      fn();
    }, ms);
  };
  call.cancel = () => {
    clearTimeout(timer);
    timer = undefined;
  };
  return call;
}

/**
 * A Server-Sent Events reader for black-box tests of /api/v1/realtime: the events as parsed by the
 * rules of the SSE format (what EventSource does), and a wait for the next one that matches.
 */
export type SseEvent = { id: string | null; event: string; data: string; json: Record<string, any> };

export type SseStream = {
  status: number;
  headers: Headers;
  events: SseEvent[];
  /** Comment lines (heartbeats) seen so far. */
  comments: number;
  /** Resolves with the first event (seen or to come) that `match` accepts; rejects after `ms`. */
  next(match: (e: SseEvent) => boolean, ms?: number): Promise<SseEvent>;
  /** Resolves once the server ended the stream. */
  ended: Promise<void>;
  close(): void;
  /** The body when the answer was no stream (an error envelope). */
  body: Record<string, any> | null;
};

export async function openSse(url: string, headers: Record<string, string> = {}): Promise<SseStream> {
  const ac = new AbortController();
  const res = await fetch(url, { headers: { accept: "text/event-stream", ...headers }, signal: ac.signal });
  const events: SseEvent[] = [];
  const waiters = new Set<() => void>();
  const s: SseStream = {
    status: res.status,
    headers: res.headers,
    events,
    comments: 0,
    body: null,
    ended: Promise.resolve(),
    next(match, ms = 5000) {
      return new Promise((resolve, reject) => {
        let from = 0;
        const check = () => {
          for (; from < events.length; from++) {
            if (match(events[from])) {
              clearTimeout(timer);
              waiters.delete(check);
              resolve(events[from]);
              return;
            }
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no matching event within ${ms} ms; got: ${events.map((e) => `${e.event} ${e.data.slice(0, 200)}`).join(" | ")}`));
        }, ms);
        waiters.add(check);
        check();
      });
    },
    close: () => ac.abort(),
  };
  if (!res.headers.get("content-type")?.startsWith("text/event-stream")) {
    s.body = (await res.json()) as Record<string, any>;
    return s;
  }
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  s.ended = (async () => {
    let buffer = "";
    let cur = { id: null as string | null, event: "message", data: [] as string[] };
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let nl: number;
        while ((nl = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 1);
          if (line === "") {
            if (cur.data.length) {
              const data = cur.data.join("\n");
              events.push({ id: cur.id, event: cur.event, data, json: JSON.parse(data) });
              for (const w of [...waiters]) w();
            }
            cur = { id: null, event: "message", data: [] };
          } else if (line.startsWith(":")) s.comments++;
          else {
            const colon = line.indexOf(":");
            const field = colon < 0 ? line : line.slice(0, colon);
            const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
            if (field === "id") cur.id = value;
            else if (field === "event") cur.event = value;
            else if (field === "data") cur.data.push(value);
          }
        }
      }
    } catch {
      // aborted by close()
    }
  })();
  return s;
}

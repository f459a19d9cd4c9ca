/** PostgreSQL snapshots as text (`pg_current_snapshot()::text`), and what they say of a transaction. */

/** What a snapshot says of transaction ids: those below xmin ended, those from xmax on had not begun, xip were running. */
export type Snapshot = { xmin: number; xmax: number; xip: Set<number> };

/** `pg_current_snapshot()::text`: `xmin:xmax:xip,xip,…`. */
export function parseSnapshot(text: string): Snapshot {
  const [xmin, xmax, xip] = text.split(":");
  return { xmin: Number(xmin), xmax: Number(xmax), xip: new Set(xip ? xip.split(",").map(Number) : []) };
}

/** The transaction had ended when the snapshot was taken (committed, for a transaction known to have). */
export const ended = (s: Snapshot, xid: number) => xid < s.xmin || (xid < s.xmax && !s.xip.has(xid));

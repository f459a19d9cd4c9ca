/**
 * The change feed: every record write adds its change inside its transaction (records/service.ts);
 * once the transaction committed, the changes go to this process's subscribers (the hub) and, on
 * PostgreSQL, to the other instances over the store's bus. A transaction that rolls back tells
 * nobody. Above `bulkAbove` changes of one resource in one transaction (an import batch, a bulk
 * PUT) the resource's changes become one `bulk` change: a million-row import never floods anyone.
 */
import type { Change, ChangeFeed } from "../site";
import type { InstanceBus, Store, StoreTx } from "../store/types";

type TxChanges = { changes: Change[]; counts: Map<string, number> };
type Sink = Parameters<ChangeFeed["attach"]>[0];
type LoadRecord = Parameters<ChangeFeed["listen"]>[0];

/** A change as it crosses the bus; `ref`: the record did not fit, the receiver reads it. */
type Wire = Change | { resource: string; action: "create" | "update" | "delete" | "restore"; uuid: string; modified: number; by: string | null; ref: 1 };

export class Feed implements ChangeFeed {
  private readonly sinks = new Set<Sink>();
  private readonly txs = new WeakMap<StoreTx, TxChanges>();
  /** Messages handed to the bus and not sent yet. */
  private readonly sending = new Set<Promise<void>>();

  constructor(private readonly store: Store, private readonly bulkAbove: number) {}

  get on(): boolean {
    return this.sinks.size > 0 || this.store.bus !== undefined;
  }

  /** `sink` gets every committed change of this process, and with `listen` those of other instances. */
  attach(sink: Sink): () => void {
    this.sinks.add(sink);
    return () => this.sinks.delete(sink);
  }

  private of(tx: StoreTx): TxChanges {
    let t = this.txs.get(tx);
    if (!t) {
      const fresh: TxChanges = (t = { changes: [], counts: new Map() });
      this.txs.set(tx, fresh);
      tx.afterCommit(() => this.committed(fresh));
    }
    return t;
  }

  add(tx: StoreTx, resource: string, build: () => Change): void {
    const t = this.of(tx);
    const n = (t.counts.get(resource) ?? 0) + 1;
    t.counts.set(resource, n);
    if (n <= this.bulkAbove) t.changes.push(build());
    else if (n === this.bulkAbove + 1) t.changes = t.changes.filter((c) => c.resource !== resource);
  }

  bulk(tx: StoreTx, resource: string, count: number): void {
    const t = this.of(tx);
    if ((t.counts.get(resource) ?? 0) <= this.bulkAbove) t.changes = t.changes.filter((c) => c.resource !== resource);
    t.counts.set(resource, (t.counts.get(resource) ?? 0) + Math.max(count, this.bulkAbove + 1));
  }

  private committed(t: TxChanges): void {
    const changes = t.changes;
    for (const [resource, n] of t.counts) if (n > this.bulkAbove) changes.push({ resource, action: "bulk", count: n });
    if (!changes.length) return;
    this.deliver(changes);
    const bus = this.store.bus;
    // Handed over at once: the bus sends in the order it is given (a change of a record never
    // overtakes the one before it), after the notice of its commit and in the same statement. Not
    // even encoded when no other instance was there as it committed.
    if (bus?.heard()) {
      const sent = bus.send(this.messages(bus, changes)).catch((e) => console.error("telling the other instances of a change failed:", e instanceof Error ? e.message : e));
      this.sending.add(sent);
      void sent.finally(() => this.sending.delete(sent));
    }
  }

  private deliver(changes: Change[]): void {
    for (const sink of this.sinks) {
      try {
        sink(changes);
      } catch (e) {
        console.error("a realtime subscriber failed:", e);
      }
    }
  }

  /** Messages of whole changes packed up to the bus's bound; a change too large alone goes as a reference. */
  private messages(bus: InstanceBus, changes: Change[]): string[] {
    const room = bus.maxBytes - 2;
    const out: string[] = [];
    let batch: string[] = [];
    let bytes = 0;
    for (const c of changes) {
      let json = JSON.stringify(c);
      let size = Buffer.byteLength(json);
      if (size > room && c.action !== "bulk") {
        const ref: Wire = { resource: c.resource, action: c.action, uuid: c.uuid, modified: c.modified, by: c.by, ref: 1 };
        json = JSON.stringify(ref);
        size = Buffer.byteLength(json);
      }
      if (batch.length && bytes + size + 1 > room) {
        out.push(`[${batch.join(",")}]`);
        batch = [];
        bytes = 0;
      }
      batch.push(json);
      bytes += size + 1;
    }
    if (batch.length) out.push(`[${batch.join(",")}]`);
    return out;
  }

  /**
   * Hears the other instances' changes (PostgreSQL) and hands them to this process's sinks, in the
   * order they were sent. `lost`: messages may have been missed (the listening connection dropped).
   */
  async listen(load: LoadRecord, lost: () => void): Promise<() => Promise<void>> {
    const bus = this.store.bus;
    if (!bus) return async () => {};
    let chain = Promise.resolve();
    return bus.listen((message) => {
      chain = chain.then(() => this.received(message, load)).catch((e) => console.error("a change from another instance could not be read:", e));
    }, lost);
  }

  private async received(message: string, load: LoadRecord): Promise<void> {
    const wires = JSON.parse(message) as Wire[];
    const changes: Change[] = [];
    for (const w of wires) {
      if (!("ref" in w)) {
        changes.push(w);
        continue;
      }
      // The record did not fit the message: it is read now (it may have changed again since; a
      // record gone meanwhile is told by its delete). What it was before is not known.
      if (w.action === "delete") {
        changes.push({ resource: w.resource, action: "delete", uuid: w.uuid, record: { uuid: w.uuid }, previous: undefined, modified: w.modified, by: w.by });
        continue;
      }
      const record = await load(w.resource, w.uuid);
      if (record) changes.push({ resource: w.resource, action: w.action, uuid: w.uuid, record, previous: undefined, modified: w.modified, by: w.by });
    }
    if (changes.length) this.deliver(changes);
  }

  /** Waits until what was committed has reached the other instances (a command exits after it). */
  async flush(): Promise<void> {
    while (this.sending.size) await Promise.all(this.sending);
  }
}

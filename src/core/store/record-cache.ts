/**
 * Stored records read one by one (GET of one record), kept between the commits that change them.
 *
 * Reading a record from SQLite costs ~7 µs of a GET's ~25 µs. Kept here, a read again costs a hash
 * and an array lookup. A commit of this process that updates or deletes records drops exactly
 * those (inserts change no existing row and drop nothing); emptying a resource drops its records,
 * another process's commit or a schema change drops everything.
 *
 * The table is direct-mapped: a record has one slot, chosen by a hash of its resource and uuid,
 * and a record kept in a taken slot replaces the one there; when the bytes are spent, other slots
 * are emptied in turn (round robin) until it fits. Nothing is moved or rehashed (a Map of
 * recently used entries, rehashing under churn, made reads of many distinct records four times
 * slower). Emptying a resource is a generation number, not a sweep; a drop of everything empties
 * the table (a few hundred microseconds), so that the memory goes with it.
 *
 * A record goes in at its second read in a row from its slot; the first only leaves a 32-bit
 * fingerprint there, which holds nothing for the collector to walk. Kept at every read, records
 * read at random among far more than fit replaced one another at almost every read, and the
 * garbage cost 10 % of the rate and doubled the p99 (300,000 distinct records of 1M).
 */
import type { StoredRecord } from "./types";

/** Estimated bytes a kept record holds beyond its JSON text, counted at two bytes a character (the row object, its strings, the slot). */
const ROW_OVERHEAD = 320;

/** Per resource, the records a commit updated or deleted (null: any of them). */
export type ChangedRecords = Map<string, Set<string> | null>;

export class RecordCache {
  private readonly mask: number;
  private readonly uuids: (string | undefined)[];
  private readonly resources: (string | undefined)[];
  private readonly rows: (StoredRecord | undefined)[];
  private readonly sizes: Int32Array;
  /** The generation of its resource each slot was filled in. */
  private readonly slotGens: Int32Array;
  /** Per slot, the fingerprint of the last record read there and not kept. */
  private readonly seen: Int32Array;
  private readonly gens = new Map<string, number>();
  private bytes = 0;
  /** The next slot to empty when a record needs room (round robin). */
  private hand = 0;

  /** `slots`: a power of two; `maxBytes`: past it, a record goes in only in place of another. */
  constructor(private readonly maxBytes: number, slots = 1 << 17) {
    this.mask = slots - 1;
    this.uuids = new Array(slots);
    this.resources = new Array(slots);
    this.rows = new Array(slots);
    this.sizes = new Int32Array(slots);
    this.slotGens = new Int32Array(slots);
    this.seen = new Int32Array(slots);
  }

  /** Per resource, a hash of its name (a handful of resources, read on every request). */
  private readonly resourceHashes = new Map<string, number>();

  /** 32 bits of a record's hash (CRC-32 in native code: a loop over the uuid here cost 10 % of a GET). */
  private hash(resource: string, uuid: string): number {
    let r = this.resourceHashes.get(resource);
    if (r === undefined) this.resourceHashes.set(resource, (r = Math.imul(Bun.hash.crc32(resource), 0x9e3779b1)));
    return Bun.hash.crc32(uuid) ^ r;
  }

  /**
   * The kept record, else `load`'s (kept from its second read on, see above). `load` reads the
   * committed record, or null when there is none (never kept).
   */
  read(resource: string, uuid: string, load: () => StoredRecord | null): StoredRecord | null {
    if (this.maxBytes <= 0) return load();
    const h = this.hash(resource, uuid);
    const i = h & this.mask;
    if (this.uuids[i] === uuid && this.resources[i] === resource && this.slotGens[i] === this.gen(resource)) return this.rows[i]!;
    const row = load();
    if (row) this.put(i, h | 1, resource, row);
    return row;
  }

  private gen(resource: string): number {
    return this.gens.get(resource) ?? 0;
  }

  /** Keeps a record read from the database in slot `i`, at its second read in a row there. */
  private put(i: number, fingerprint: number, resource: string, row: StoredRecord): void {
    const size = row.data.length * 2 + ROW_OVERHEAD;
    if (size > this.maxBytes / 64) return;
    if (this.seen[i] !== fingerprint) {
      this.seen[i] = fingerprint;
      return;
    }
    this.seen[i] = 0;
    // Whatever the slot held, the budget holds: other slots are emptied in turn until the record fits.
    let over = this.bytes - this.sizes[i]! + size - this.maxBytes;
    while (over > 0) {
      const j = this.hand;
      this.hand = (j + 1) & this.mask;
      if (j === i || this.rows[j] === undefined) continue;
      over -= this.sizes[j]!;
      this.empty(j);
    }
    this.bytes += size - this.sizes[i]!;
    this.uuids[i] = row.uuid;
    this.resources[i] = resource;
    this.rows[i] = row;
    this.sizes[i] = size;
    this.slotGens[i] = this.gen(resource);
  }

  /** After a commit of this process: the records it updated or deleted go. */
  committed(changed: ChangedRecords): void {
    for (const [resource, uuids] of changed) {
      if (uuids === null) this.gens.set(resource, this.gen(resource) + 1);
      else for (const uuid of uuids) this.drop(resource, uuid);
    }
  }

  private drop(resource: string, uuid: string): void {
    const i = this.hash(resource, uuid) & this.mask;
    if (this.uuids[i] === uuid && this.resources[i] === resource) this.empty(i);
  }

  private empty(i: number): void {
    this.bytes -= this.sizes[i]!;
    this.uuids[i] = undefined;
    this.resources[i] = undefined;
    this.rows[i] = undefined;
    this.sizes[i] = 0;
  }

  /** Everything goes (another process committed, the schema changed), memory included. */
  dropAll(): void {
    this.uuids.fill(undefined);
    this.resources.fill(undefined);
    this.rows.fill(undefined);
    this.sizes.fill(0);
    this.bytes = 0;
  }

  /** Estimated bytes held. */
  get heldBytes(): number {
    return this.bytes;
  }
}

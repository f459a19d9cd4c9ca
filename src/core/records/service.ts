/**
 * The generic record operations behind `/api/v1/{resource}`, shared by HTTP, CLI and import.
 * Each checks access first, prepares values outside the transaction, then writes in one.
 */
import type { Change, Site, WriteEvent } from "../site";
import { HISTORY_WINDOW_MS } from "../site";
import { authorize, can, type Action, type Principal } from "../access/permissions";
import { guardWrite } from "../access/write-guard";
import { ACCOUNT_RESOURCES, guardAccountWrite } from "../access/account-guard";
import { AppError, badRequest, conflict, notFound } from "../errors";
import type { ResourceDef } from "../definitions/types";
import { compileList } from "../query/compile";
import { parseListParams, type ListParams } from "../query/parse";
import type { HistoryEntry, StoreTx, StoredRecord } from "../store/types";
import { publicRecord, visibleData } from "./output";
import { checkUuid, prepareValues } from "./prepare";
import { asObject, type Values } from "../validation/object";
import { newRecordId } from "./ids";

export type ListResult = {
  def: ResourceDef;
  /** A page (limit given, small) or a stream of rows (unpaged or large). */
  rows: StoredRecord[] | AsyncIterable<StoredRecord>;
  total: number | null;
  lastChange: number;
};

/** Pages up to this size are built in memory; anything larger is streamed. */
const STREAM_ABOVE = 1000;
const nowSec = () => Math.floor(Date.now() / 1000);

/** `caller`: who asks in person, for the store's fair share of list queries (see CompiledQuery.caller). */
export async function listRecords(site: Site, p: Principal, resource: string, params: ListParams, caller?: string): Promise<ListResult> {
  const def = site.resource(resource);
  authorize(p, resource, "view");
  return queryList(site, def, params, caller);
}

/** A list query on any resource's table, built-in ones included; the caller has checked access. */
export async function queryList(site: Site, def: ResourceDef, params: ListParams, caller?: string): Promise<ListResult> {
  const q = parseListParams(params, site.config.maxLimit);
  const compiled = { ...compileList(site.store.dialect, def, q), caller };
  const lastChange = await site.store.lastChange(def.name);
  if (q.limit === null || q.limit > STREAM_ABOVE) {
    return { def, rows: site.store.stream(def.name, compiled), total: q.wantsTotal ? await site.store.count(def.name, compiled) : null, lastChange };
  }
  const rows = await site.store.page(def.name, compiled);
  // A page that is not full is the end of the list: its total needs no count (most searches for
  // one record, and any short list). A page past the end says nothing about where the end is.
  const ended = rows.length < q.limit && (rows.length > 0 || q.offset === 0);
  const total = !q.wantsTotal ? null : ended ? q.offset + rows.length : await site.store.count(def.name, compiled);
  return { def, rows, total, lastChange };
}

export async function readRecord(site: Site, p: Principal, resource: string, uuid: string): Promise<{ def: ResourceDef; row: StoredRecord }> {
  const def = site.resource(resource);
  authorize(p, resource, "view", uuid);
  const row = await site.store.get(resource, uuid);
  if (!row) throw notFound(`${resource}/${uuid} does not exist`);
  return { def, row };
}

/**
 * readRecord without waiting, where the store reads in place; null wherever readRecord would wait
 * or refuse (it then answers, with its error).
 */
export function readRecordNow(site: Site, p: Principal, resource: string, uuid: string): { def: ResourceDef; row: StoredRecord } | null {
  const def = site.served(resource);
  const row = def && site.store.now && can(p, resource, "view", uuid) ? site.store.now.get(resource, uuid) : null;
  return row ? { def: def!, row } : null;
}

const parse = (row: StoredRecord) => JSON.parse(row.data) as Values;

/** `data` is the row's values when the caller still has them (spares parsing what it just wrote). */
function event(def: ResourceDef, action: WriteEvent["action"], row: StoredRecord, previous: StoredRecord | null, user: string | null, data?: Values): WriteEvent {
  return {
    resource: def.name,
    action,
    uuid: row.uuid,
    record: { uuid: row.uuid, ...visibleData(def, data ?? parse(row)), _created: row._created, _modified: row._modified },
    previous: previous ? { uuid: previous.uuid, ...visibleData(def, parse(previous)), _created: previous._created, _modified: previous._modified } : null,
    user,
  };
}

/** `agent`: the AI agent that writes for `user` (core/agents), named in the history entry. */
type Write = { action: WriteEvent["action"]; row: StoredRecord; previous: StoredRecord | null; user: string | null; agent?: string; data?: Values };

/** The change realtime subscribers are told: the record as the API returns it, before and after. */
function change(def: ResourceDef, w: Write, history: "create" | "update" | "delete" | "restore"): Change {
  const { row } = w;
  const record = w.data
    ? { uuid: row.uuid, ...visibleData(def, w.data), _created: row._created, _modified: row._modified, _created_by: row._created_by, _modified_by: row._modified_by }
    : publicRecord(def, row);
  const previous = w.action === "delete" ? record : w.previous && publicRecord(def, w.previous);
  return { resource: def.name, action: history, uuid: row.uuid, record, previous, modified: w.action === "delete" ? nowSec() : row._modified, by: w.user };
}

/**
 * Records history, runs in-transaction hooks and schedules listeners for one write.
 *
 * A record's creation is not copied into its history: until the record first changes, the record
 * itself is its creation state (see historyOf). The first update, delete or restore writes that
 * "create" entry from the record as it was, then its own. An import of a million new records so
 * writes a million rows, not two million, with nothing lost.
 */
async function afterWrite(site: Site, tx: StoreTx, def: ResourceDef, w: Write, history: "create" | "update" | "delete" | "restore") {
  if (def.history && history !== "create") {
    if (w.previous) await tx.addCreationIfMissing(def.name, w.previous);
    await tx.addHistory({ resource: def.name, uuid: w.row.uuid, action: history, at: Date.now(), user: w.user, data: w.row.data, _created: w.row._created, via: w.agent ?? null });
  }
  if (site.feed.on) site.feed.add(tx, def.name, () => change(def, w, history));
  // The event is built only for whoever receives it: an import has usually nobody.
  const hooks = site.txHooks.filter((h) => h.wants(def.name, w.action));
  if (!hooks.length && !site.listeners.length) return;
  const e = event(def, w.action, w.row, w.previous, w.user, w.data);
  for (const hook of hooks) await hook.run(tx, e);
  // Without listeners nothing is scheduled: an import of a million rows must not hold a million events.
  if (site.listeners.length) tx.afterCommit(() => {
    for (const l of site.listeners) {
      Promise.resolve().then(() => l(e)).catch((err) => console.error(`listener failed for ${e.resource} ${e.action}:`, err));
    }
  });
}

/** Who writes, and which permissions the route needs: checked again inside the transaction for accounts. */
export type Actor = { p: Principal; via: readonly Action[] };
export const actor = (p: Principal, ...via: Action[]): Actor => ({ p, via });

async function insertPrepared(site: Site, tx: StoreTx, def: ResourceDef, uuid: string, values: Values, by: Actor, history: "create" | "restore" = "create", created?: number): Promise<StoredRecord> {
  if (ACCOUNT_RESOURCES.has(def.name)) await guardAccountWrite(site, tx, by.p, def, { uuid, before: null, after: values, via: by.via });
  const user = by.p.uuid;
  const now = nowSec();
  const row: StoredRecord = { uuid, data: JSON.stringify(values), _created: created ?? now, _modified: now, _created_by: user, _modified_by: user };
  await tx.insert(def.name, row);
  await afterWrite(site, tx, def, { action: "create", row, previous: null, user, agent: by.p.agent, data: values }, history);
  return row;
}

async function updatePrepared(site: Site, tx: StoreTx, def: ResourceDef, existing: StoredRecord, values: Values, by: Actor, history: "update" | "restore" = "update"): Promise<StoredRecord> {
  // An update merges the given fields; a restore brings back the whole record as it was.
  const data = history === "restore" ? values : { ...parse(existing), ...values };
  if (ACCOUNT_RESOURCES.has(def.name)) await guardAccountWrite(site, tx, by.p, def, { uuid: existing.uuid, before: parse(existing), after: data, via: by.via });
  const user = by.p.uuid;
  const row: StoredRecord = { ...existing, data: JSON.stringify(data), _modified: nowSec(), _modified_by: user };
  await tx.update(def.name, row);
  await afterWrite(site, tx, def, { action: "update", row, previous: existing, user, agent: by.p.agent, data }, history);
  return row;
}

/** `also`: more writes in the record's own transaction (an invitation's token and mail), all or nothing. */
export async function createRecord(site: Site, p: Principal, resource: string, body: unknown, pathUuid?: string, also?: (tx: StoreTx, row: StoredRecord) => Promise<void>): Promise<{ def: ResourceDef; row: StoredRecord }> {
  const def = site.resource(resource);
  const input = await guardWrite(site, p, def, "create", body);
  if (pathUuid !== undefined && input.uuid !== undefined && input.uuid !== pathUuid) throw badRequest("the uuid in the body differs from the one in the path");
  const given = pathUuid ?? input.uuid;
  const uuid = given === undefined ? newRecordId() : checkUuid(given);
  // A generated uuid cannot exist; a given one is checked early so that a conflict skips the work.
  if (given !== undefined && (await site.store.get(resource, uuid))) throw conflict(`${resource}/${uuid} already exists`);
  const values = await prepareValues(site.store, def, input, "create", uuid, { passwordMinLength: site.config.passwordMinLength });
  const row = await site.store.transaction(async (tx) => {
    const made = await insertPrepared(site, tx, def, uuid, values, actor(p, "create"));
    if (also) await also(tx, made);
    return made;
  });
  return { def, row };
}

/** Prepares one update (or, with upsert, a create) outside the transaction. */
async function prepareUpdate(site: Site, def: ResourceDef, uuid: string, body: unknown) {
  const input = asObject(body, `the fields of ${uuid}`);
  const existing = await site.store.get(def.name, uuid);
  if (!existing && !def.upsert) throw notFound(`${def.name}/${uuid} does not exist`);
  const values = await prepareValues(site.store, def, input, existing ? "update" : "create", uuid, { passwordMinLength: site.config.passwordMinLength });
  return { uuid, values, create: !existing };
}

type Prepared = Awaited<ReturnType<typeof prepareUpdate>>;

/**
 * A single write's precondition, judged on the record as the write's transaction read it (the HTTP
 * layer builds it from If-Match / If-Unmodified-Since): false answers 412 and writes nothing.
 */
export type Expect = (current: StoredRecord) => boolean;

/**
 * 412 unless `expect` holds for `current`. A missing record fulfils no precondition, yet where a
 * write without one answers 404 (no upsert), 404 comes first (RFC 9110 13.2.1): the caller throws it.
 */
function failedPrecondition(def: ResourceDef, uuid: string, current: StoredRecord | null, expect: Expect): AppError | null {
  if (!current) return def.upsert ? new AppError(412, "PRECONDITION_FAILED", `${def.name}/${uuid} does not exist; nothing was written`) : null;
  if (expect(current)) return null;
  return new AppError(412, "PRECONDITION_FAILED", `${def.name}/${uuid} has changed since the version the request names; nothing was written`,
    { _modified: current._modified, _modified_by: current._modified_by });
}

function mustHold(def: ResourceDef, uuid: string, current: StoredRecord | null, expect: Expect): void {
  const failed = failedPrecondition(def, uuid, current, expect);
  if (failed) throw failed;
}

async function applyUpdate(site: Site, tx: StoreTx, def: ResourceDef, u: Prepared, p: Principal, expect?: Expect): Promise<StoredRecord> {
  const current = await tx.get(def.name, u.uuid);
  if (expect) mustHold(def, u.uuid, current, expect);
  if (u.create) return current ? updatePrepared(site, tx, def, current, u.values, actor(p, "edit")) : insertPrepared(site, tx, def, u.uuid, u.values, actor(p, "create"));
  if (!current) throw notFound(`${def.name}/${u.uuid} does not exist`);
  return updatePrepared(site, tx, def, current, u.values, actor(p, "edit"));
}

/** `expect`: a precondition, checked in the write's transaction (see Expect). */
export async function updateRecord(site: Site, p: Principal, resource: string, uuid: string, body: unknown, expect?: Expect): Promise<{ def: ResourceDef; row: StoredRecord; created: boolean }> {
  const def = site.resource(resource);
  const input = await guardWrite(site, p, def, "edit", body, uuid);
  // Also before the values are prepared: a stale write answers 412 rather than 422 (RFC 9110 13.2.1)
  // and hashes no password. The check that counts is the one in the transaction; this read may come
  // from the cache, a moment behind another instance's commit, so a transaction's read confirms a 412.
  if (expect && failedPrecondition(def, uuid, await site.store.get(resource, uuid), expect)) {
    await site.store.transaction(async (tx) => mustHold(def, uuid, await tx.get(resource, uuid), expect));
  }
  const u = await prepareUpdate(site, def, uuid, input);
  if (u.create) authorize(p, resource, "create");
  const row = await site.store.transaction((tx) => applyUpdate(site, tx, def, u, p, expect));
  return { def, row, created: u.create };
}

/** Bulk PUT: an object keyed by uuid. All or nothing: one bad record changes nothing. */
export async function bulkUpdate(site: Site, p: Principal, resource: string, body: unknown): Promise<{ def: ResourceDef; rows: StoredRecord[] }> {
  const def = site.resource(resource);
  authorize(p, resource, "edit");
  const entries = Object.entries(asObject(body));
  if (entries.length === 0) throw badRequest("the body must hold at least one record keyed by uuid");
  const prepared: Prepared[] = [];
  const errors: Record<string, string> = Object.create(null);
  for (const [uuid, fields] of entries) {
    try {
      prepared.push(await prepareUpdate(site, def, checkUuid(uuid), await guardWrite(site, p, def, "edit", fields, uuid)));
    } catch (e) {
      if (!(e instanceof AppError) || e.status !== 422) throw e;
      for (const [f, why] of Object.entries(e.extra.errors ?? {})) errors[`${uuid}.${f}`] = why;
    }
  }
  if (Object.keys(errors).length) throw new AppError(422, "INVALID_DATA", "one or more records are invalid; nothing was changed", { errors });
  if (prepared.some((u) => u.create)) authorize(p, resource, "create");
  const rows = await site.store.transaction(async (tx) => {
    const out: StoredRecord[] = [];
    for (const u of prepared) out.push(await applyUpdate(site, tx, def, u, p));
    return out;
  });
  return { def, rows };
}

/** `expect`: a precondition, checked in the delete's transaction (see Expect). */
export async function deleteRecord(site: Site, p: Principal, resource: string, uuid: string, expect?: Expect): Promise<{ def: ResourceDef; row: StoredRecord }> {
  const def = site.resource(resource);
  authorize(p, resource, "delete", uuid);
  const row = await site.store.transaction(async (tx) => {
    const existing = await tx.get(resource, uuid);
    if (!existing) throw notFound(`${resource}/${uuid} does not exist`);
    if (expect) mustHold(def, uuid, existing, expect);
    await deletePrepared(site, tx, def, existing, actor(p, "delete"));
    return existing;
  });
  return { def, row };
}

export async function deleteAllRecords(site: Site, p: Principal, resource: string): Promise<number> {
  const def = site.resource(resource);
  authorize(p, resource, "delete_all");
  // Accounts are deleted one by one through their guard (the admin role, stronger users stay).
  if (!def.raw.events?.delete?.length && !ACCOUNT_RESOURCES.has(def.name)) {
    return site.store.transaction(async (tx) => {
      const n = await tx.deleteAll(resource, def.history ? { user: p.uuid, at: Date.now() } : null);
      if (n && site.feed.on) site.feed.bulk(tx, resource, n);
      return n;
    });
  }
  // Declared delete events and jobs are delivered for every record, as for single deletes. The
  // listing reads the last commit, which is the whole table: this transaction holds the write lock.
  return site.store.transaction(async (tx) => {
    let n = 0;
    for await (const row of site.store.stream(resource, { where: "", args: [], orderBy: "ORDER BY id", limit: null, offset: 0 })) {
      await deletePrepared(site, tx, def, row, actor(p, "delete_all"));
      n++;
    }
    return n;
  });
}

/** `via`: the AI agent that made the change for `user`, when one did. */
export type HistoryView = { id: number; action: string; at: number; user: string | null; via?: string; uuid?: string; record: Record<string, unknown> };

/**
 * A record's history, oldest first. A record never changed since its creation has no stored entry:
 * its creation is the record itself, shown as entry 0 (see afterWrite). Entry 0 keeps naming the
 * creation once a change has written it out under an id of its own.
 */
async function historyOf(site: Site, def: ResourceDef, uuid: string): Promise<HistoryEntry[]> {
  const entries = await site.store.history(def.name, uuid);
  if (entries.length || !def.history) return entries;
  const row = await site.store.get(def.name, uuid);
  if (!row) return entries;
  return [{ id: 0, resource: def.name, uuid, action: "create", at: row._created * 1000, user: row._created_by, data: row.data, _created: row._created }];
}

export async function recordHistory(site: Site, p: Principal, resource: string, uuid: string): Promise<HistoryView[]> {
  const def = site.resource(resource);
  authorize(p, resource, "view", uuid);
  const entries = await historyOf(site, def, uuid);
  if (!entries.length && !(await site.store.get(resource, uuid))) throw notFound(`${resource}/${uuid} has no record and no history`);
  return entries.map((e) => ({ id: e.id, action: e.action, at: e.at, user: e.user, ...(e.via ? { via: e.via } : {}), record: visibleData(def, JSON.parse(e.data)) }));
}

/** Records of a resource deleted within the restore window and not restored since, newest first. */
export async function deletedRecords(site: Site, p: Principal, resource: string, limit = 200): Promise<HistoryView[]> {
  const def = site.resource(resource);
  authorize(p, resource, "view");
  const entries = await site.store.deleted(resource, Date.now() - HISTORY_WINDOW_MS, limit);
  return entries.map((e) => ({ id: e.id, action: e.action, at: e.at, user: e.user, ...(e.via ? { via: e.via } : {}), uuid: e.uuid, record: visibleData(def, JSON.parse(e.data)) }));
}

/**
 * Restores a record from its history: by default the state it had when it was deleted (within
 * 90 days); with `entry`, the state of that history entry (also for a record that still exists).
 */
export async function restoreRecord(site: Site, p: Principal, resource: string, uuid: string, entryId?: number): Promise<{ def: ResourceDef; row: StoredRecord }> {
  const def = site.resource(resource);
  authorize(p, resource, "edit", uuid);
  authorize(p, resource, "create");
  const entries = await historyOf(site, def, uuid);
  // Entry 0 is the creation, whether it is still the record itself or was written out since.
  const entry = entryId === undefined ? entries.at(-1) : entries.find((e) => e.id === entryId || (entryId === 0 && e.action === "create"));
  if (!entry) throw notFound(entryId !== undefined ? `history entry ${entryId} of ${resource}/${uuid} does not exist` : `${resource}/${uuid} has no history`);
  if (entryId === undefined && entry.action !== "delete") throw conflict(`${resource}/${uuid} is not deleted; name a history entry to roll back to`);
  const deletedAt = entries.at(-1)?.action === "delete" ? entries.at(-1)!.at : null;
  if (deletedAt !== null && Date.now() - deletedAt > HISTORY_WINDOW_MS) throw notFound(`${resource}/${uuid} was deleted more than 90 days ago`);
  const values = JSON.parse(entry.data) as Values;
  // A restore is a write like any other: a restored role or user passes the account guard.
  const by = actor(p, "edit", "create");
  const row = await site.store.transaction(async (tx) => {
    const current = await tx.get(resource, uuid);
    // A create writes no history entry: a record deleted and created again under its uuid still
    // ends its history with the delete, yet it is not deleted.
    if (current && entryId === undefined) throw conflict(`${resource}/${uuid} is not deleted; name a history entry to roll back to`);
    return current
      ? updatePrepared(site, tx, def, current, values, by, "restore")
      : insertPrepared(site, tx, def, uuid, values, by, "restore", entry._created);
  });
  return { def, row };
}

/** Deletes one row inside a transaction with the same history, hooks and events as deleteRecord. */
async function deletePrepared(site: Site, tx: StoreTx, def: ResourceDef, existing: StoredRecord, by: Actor): Promise<void> {
  if (ACCOUNT_RESOURCES.has(def.name)) await guardAccountWrite(site, tx, by.p, def, { uuid: existing.uuid, before: parse(existing), after: null, via: by.via });
  await tx.delete(def.name, existing.uuid);
  await afterWrite(site, tx, def, { action: "delete", row: existing, previous: existing, user: by.p.uuid, agent: by.p.agent }, "delete");
}

/** Core-level writers for library code and import: same rules, no HTTP. */
export const writers = { insertPrepared, updatePrepared, deletePrepared };

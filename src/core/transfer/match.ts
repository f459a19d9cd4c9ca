/**
 * Finds the record an import row updates. By default (spec, import rule) the one whose `uuid`
 * matches, otherwise the one whose `id`, `name` or `title` matches, tried in that order. The
 * importer may narrow that: `uuid` only, one unique field (after the uuid), or nothing at all
 * (every row creates). For a row without a uuid, records written by earlier rows of the same file
 * count too, so a file that names one title twice updates the record its first row created.
 */
import type { ResourceDef } from "../definitions/types";
import type { RecordReads } from "../store/types";
import { badRequest } from "../errors";
import { checkField } from "../validation/fields";
import { escapeShortcodes } from "../validation/shortcodes";
import { KeyTable } from "./keytable";

export const MATCH_FIELDS = ["id", "name", "title"] as const;

/** A match key: the field and its value as stored (type kept: 12 and "12" differ, as in SQL). */
export type MatchKey = { field: string; value: string | number; key: string };

const keyOf = (field: string, value: unknown) => `${field}\u0000${typeof value}\u0000${String(value)}`;

/** How rows find the record they update: the spec's default, uuid only, uuid then one unique field, or never. */
export type MatchRule = { by: "default" } | { by: "uuid" } | { by: "field"; field: string } | { by: "none" };

/** Reads `uuid`, `none`, `default` or a field name (CLI --match, HTTP ?match=); a field must be unique. */
export function parseMatchRule(def: ResourceDef, raw: string | undefined | null): MatchRule {
  if (raw === undefined || raw === null || raw === "" || raw === "default") return { by: "default" };
  if (raw === "uuid" || raw === "none") return { by: raw };
  const f = def.fields[raw];
  if (!f || def.hidden.has(raw)) throw badRequest(`match: "${raw}" is not a field of ${def.name} (give uuid, none, default or a unique field)`);
  if (!def.unique.includes(raw) || f.i18n) throw badRequest(`match: "${raw}" is not a unique field of ${def.name}; only a unique field identifies one record`);
  return { by: "field", field: raw };
}

const fieldsOf = (rule: MatchRule): readonly string[] => (rule.by === "default" ? MATCH_FIELDS : rule.by === "field" ? [rule.field] : []);

/** The row's candidate keys, in match order: its value for each field the rule names, as it would be stored. */
export function matchKeys(def: ResourceDef, values: Record<string, unknown>, rule: MatchRule = { by: "default" }): MatchKey[] {
  const out: MatchKey[] = [];
  for (const field of fieldsOf(rule)) {
    if (!def.fields[field] || def.hidden.has(field)) continue;
    const raw = values[field];
    if (raw === null || raw === undefined || raw === "") continue;
    const r = checkField(def, field, raw);
    if (!r.ok || (typeof r.value !== "string" && typeof r.value !== "number")) continue;
    const value = typeof r.value === "string" && !def.keepShortcodes ? escapeShortcodes(r.value) : r.value;
    out.push({ field, value, key: keyOf(field, value) });
  }
  return out;
}

export class MatchIndex {
  /** Keys of records written by this import: key → uuid. */
  private readonly seen = new KeyTable();
  /** Per unindexed field, the existing records' values (loaded once: a scan per row would be quadratic). */
  private readonly scanned = new Map<string, KeyTable>();

  constructor(private readonly store: RecordReads, private readonly def: ResourceDef) {}

  private indexed(field: string): boolean {
    return this.def.unique.includes(field) || this.def.indexes.some((cols) => cols.length >= 1 && cols[0] === field);
  }

  /** The record the row updates and the key that found it, or null when the row creates one. */
  async find(uuid: string | null, keys: MatchKey[]): Promise<{ uuid: string; by: string } | null> {
    // A uuid repeated within the file is not remembered here (that would hold every uuid in
    // memory): the write phase sees the earlier row's record and turns the create into an update.
    if (uuid !== null && (await this.store.get(this.def.name, uuid))) return { uuid, by: "uuid" };
    for (const k of keys) {
      // A row with a uuid of its own is a different record from the file's other rows: it may
      // match a record that existed before, never one this file created (exact round trips).
      const hit = (uuid === null ? this.seen.get(k.key) : undefined) ?? (await this.existing(k));
      if (hit) return { uuid: hit, by: k.field };
    }
    return null;
  }

  /** Remembers what a planned row will write, for the rows after it. */
  add(uuid: string, keys: MatchKey[]): void {
    for (const k of keys) this.seen.set(k.key, uuid);
  }

  private async existing(k: MatchKey): Promise<string | null> {
    if (this.indexed(k.field)) return (await this.store.findBy(this.def.name, k.field, k.value))?.uuid ?? null;
    let values = this.scanned.get(k.field);
    if (!values) {
      values = await this.scan(k.field);
      this.scanned.set(k.field, values);
    }
    const hit = values.get(k.key);
    if (!hit) return null;
    // The table keeps hashes, not keys: confirm the hit, so that a hash collision can never make a
    // row update another record. On a mismatch, ask the store for the exact value (a rare scan).
    const row = await this.store.get(this.def.name, hit);
    if (row && (JSON.parse(row.data) as Record<string, unknown>)[k.field] === k.value) return hit;
    return (await this.store.findBy(this.def.name, k.field, k.value))?.uuid ?? null;
  }

  private async scan(field: string): Promise<KeyTable> {
    const out = new KeyTable();
    for await (const row of this.store.all(this.def.name)) {
      const v = (JSON.parse(row.data) as Record<string, unknown>)[field];
      if (typeof v !== "string" && typeof v !== "number") continue;
      out.set(keyOf(field, v), row.uuid);
    }
    return out;
  }
}

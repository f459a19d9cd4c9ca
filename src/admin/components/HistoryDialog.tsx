/**
 * Versions of a record, for the people who edit it: who (a name, not a uuid; and the agent, when one
 * made the change for them) and when, what changed shown as the overview shows values (option
 * labels, one row per changed language, list items as chips, an html text's words as a diff), and
 * roll back to a version.
 */
import { useEffect } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { diffWords } from "diff";
import { api, type Envelope } from "../api";
import type { FieldView, ResourceView } from "../state";
import { recordTitle } from "../rows";
import { Dialog } from "./Dialog";
import { display, htmlText } from "./Cell";
import { t, when } from "../i18n";

/** `via`: the agent that made the change for `user` (agent-chat). */
type Entry = { id: number; action: string; at: number; user: string | null; via?: string; record: Record<string, unknown> };
type Author = { name: string | null; email?: string };
/** One changed value: `key` is the field, or `field.language` for one language of an i18n field. */
type Change = { key: string; label: string; field?: FieldView; before: unknown; after: unknown };

const ACTIONS: Record<string, () => string> = { create: () => t("Created"), update: () => t("Changed"), delete: () => t("Deleted"), restore: () => t("Restored") };
const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/** What differs between two versions, an i18n field split by language. */
export function changes(def: ResourceView, before: Record<string, unknown> | null, after: Record<string, unknown>): Change[] {
  const keys = new Set([...Object.keys(before ?? {}), ...Object.keys(after)]);
  const out: Change[] = [];
  for (const k of keys) {
    if (k.startsWith("_") || k === "uuid" || same(before?.[k], after[k])) continue;
    const f = def.fields[k];
    const label = f?.label ?? k;
    const a = before?.[k], b = after[k];
    if (f?.i18n && (isObject(a) || isObject(b))) {
      const ao = isObject(a) ? a : {}, bo = isObject(b) ? b : {};
      for (const l of new Set([...def.languages, ...Object.keys(ao), ...Object.keys(bo)])) {
        if (!same(ao[l], bo[l])) out.push({ key: `${k}.${l}`, label: `${label} (${l})`, field: { ...f, i18n: false }, before: ao[l], after: bo[l] });
      }
    } else out.push({ key: k, label, field: f, before: a, after: b });
  }
  return out;
}

const isObject = (v: unknown): v is Record<string, unknown> => Boolean(v) && typeof v === "object" && !Array.isArray(v);

/** A value as words, with sub-fields of a group named. */
function words(f: FieldView | undefined, v: unknown): string {
  if (!f) return v === null || v === undefined ? "—" : typeof v === "object" ? JSON.stringify(v) : String(v);
  if (f.type === "group" && Array.isArray(v)) {
    return v.map((row, i) => `${i + 1}. ${Object.entries(isObject(row) ? row : {}).map(([k, x]) => `${f.fields?.[k]?.label ?? k}: ${words(f.fields?.[k], x)}`).join(", ")}`).join("; ") || "—";
  }
  if (f.i18n && isObject(v)) return Object.entries(v).map(([l, x]) => `${l}: ${words({ ...f, i18n: false }, x)}`).join("; ");
  return display(f, v);
}

function Value({ f, v }: { f?: FieldView; v: unknown }) {
  if (Array.isArray(v) && f?.type !== "group") return v.length ? <>{v.map((x, i) => <span key={i} class="chip">{words(f && { ...f, multi: false }, x)}</span>)}</> : <span class="muted">—</span>;
  if (f?.type === "color" && typeof v === "string" && v) return <><span class="swatch" style={{ background: v }} /> {v}</>;
  const w = words(f, v);
  return w === "—" ? <span class="muted">—</span> : <>{w}</>;
}

/** Long text (html, textarea) as one word diff: what went struck through, what came underlined. */
function TextDiff({ before, after }: { before: string; after: string }) {
  return <>{diffWords(before, after).map((part, i) => (part.removed ? <del key={i}>{part.value}</del> : part.added ? <ins key={i}>{part.value}</ins> : <span key={i}>{part.value}</span>))}</>;
}

function ChangeRow({ c, first }: { c: Change; first: boolean }) {
  if (first) {
    const v = c.field?.type === "html" && typeof c.after === "string" ? htmlText(c.after) : c.after;
    return <tr data-diff={c.key}><th scope="row">{c.label}</th><td><Value f={c.field?.type === "html" ? undefined : c.field} v={v} /></td></tr>;
  }
  const long = c.field && (c.field.type === "html" || c.field.type === "textarea") && !Array.isArray(c.before) && !Array.isArray(c.after);
  if (long) {
    const text = (v: unknown) => (typeof v !== "string" ? "" : c.field!.type === "html" ? htmlText(v) : v);
    return <tr data-diff={c.key}><th scope="row">{c.label}</th><td colSpan={2} class="text-diff"><TextDiff before={text(c.before)} after={text(c.after)} /></td></tr>;
  }
  return <tr data-diff={c.key}><th scope="row">{c.label}</th><td class="old"><Value f={c.field} v={c.before} /></td><td class="new"><Value f={c.field} v={c.after} /></td></tr>;
}

export function HistoryDialog({ def, uuid, title, onClose }: { def: ResourceView; uuid: string; title?: string; onClose: (changed: string | null) => void }) {
  const entries = useSignal<Entry[]>([]);
  const users = useSignal<Record<string, Author>>({});
  const error = useSignal("");
  const loaded = useSignal(false);
  useEffect(() => {
    api<Envelope & { history: Entry[]; users?: Record<string, Author> }>("GET", `/${def.name}/${uuid}/history`)
      .then((r) => { entries.value = r.body.history; users.value = r.body.users ?? {}; })
      .catch((e: Error) => (error.value = e.message))
      .finally(() => (loaded.value = true));
  }, [uuid]);
  const rollBack = async (e?: Entry) => {
    try {
      await api("POST", `/${def.name}/${uuid}/restore`, e === undefined ? {} : { entry: e.id });
      // The dialog's work is done: the list behind it shows the record as it is now.
      onClose(e ? t("Rolled back to the version of {when}.", { when: when(e.at) }) : t("Restored."));
    } catch (err) {
      error.value = (err as Error).message;
    }
  };
  const who = (user: string | null) => {
    if (!user) return t("the system");
    const a = users.value[user];
    return a ? (a.name && a.email ? `${a.name} (${a.email})` : a.name ?? a.email ?? t("a user")) : t("a former user");
  };
  const list = entries.value;
  const name = title || recordTitle(def, list.at(-1)?.record) || def.label.singular;
  return (
    <Dialog title={t("History of “{title}”", { title: name })} onClose={() => onClose(null)}>
      {error.value && <p class="error" role="alert">{error.value}</p>}
      {loaded.value && list.length === 0 && !error.value && <p class="muted">{t("No versions kept.")}</p>}
      {!loaded.value && <p role="status">{t("Loading…")}</p>}
      <ol class="history" reversed>
        {[...list].reverse().map((e) => {
          const i = list.indexOf(e);
          const diff = changes(def, i > 0 ? list[i - 1].record : null, e.record);
          return (
            <li key={e.id} data-entry={e.id}>
              <p><strong>{ACTIONS[e.action]?.() ?? e.action}</strong> <time dateTime={new Date(e.at).toISOString()}>{when(e.at)}</time> {e.via ? t("by {who} through agent {agent}", { who: who(e.user), agent: e.via }) : t("by {who}", { who: who(e.user) })}</p>
              {e.action !== "delete" && diff.length > 0 && (
                <div class="diff-wrap">
                  <table class="diff">
                    <thead><tr><th scope="col">{t("Field")}</th>{i > 0 ? <><th scope="col">{t("Before")}</th><th scope="col">{t("After")}</th></> : <th scope="col">{t("Value")}</th>}</tr></thead>
                    <tbody>{diff.map((c) => <ChangeRow key={c.key} c={c} first={i === 0} />)}</tbody>
                  </table>
                </div>
              )}
              {def.can.restore && e.action !== "delete" && i < list.length - 1 && <button type="button" onClick={() => rollBack(e)}>{t("Roll back to this version")}</button>}
              {def.can.restore && e.action === "delete" && i === list.length - 1 && <button type="button" onClick={() => rollBack()}>{t("Restore")}</button>}
            </li>
          );
        })}
      </ol>
    </Dialog>
  );
}

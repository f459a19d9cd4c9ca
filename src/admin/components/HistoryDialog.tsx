/** Versions of a record with who and when, what changed, and roll-back to a version. */
import { useEffect } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { api, type Envelope } from "../api";
import type { ResourceView } from "../state";
import { Dialog } from "./Dialog";

type Entry = { id: number; action: string; at: number; user: string | null; record: Record<string, unknown> };

const show = (v: unknown) => (v === undefined ? "—" : typeof v === "string" ? v : JSON.stringify(v));

export function changes(before: Record<string, unknown> | null, after: Record<string, unknown>): [string, unknown, unknown][] {
  const keys = new Set([...Object.keys(before ?? {}), ...Object.keys(after)]);
  return [...keys].filter((k) => !k.startsWith("_") && JSON.stringify(before?.[k]) !== JSON.stringify(after[k])).map((k) => [k, before?.[k], after[k]]);
}

export function HistoryDialog({ def, uuid, onClose }: { def: ResourceView; uuid: string; onClose: (changed: boolean) => void }) {
  const entries = useSignal<Entry[]>([]);
  const error = useSignal("");
  const changed = useSignal(false);
  const load = () => api<Envelope & { history: Entry[] }>("GET", `/${def.name}/${uuid}/history`).then((r) => (entries.value = r.body.history)).catch((e) => (error.value = e.message));
  useEffect(() => { void load(); }, [uuid]);
  const rollBack = async (id?: number) => {
    try {
      await api("POST", `/${def.name}/${uuid}/restore`, id === undefined ? {} : { entry: id });
      changed.value = true;
      await load();
    } catch (e) {
      error.value = (e as Error).message;
    }
  };
  const list = entries.value;
  return (
    <Dialog title={`History of ${def.label.singular.toLowerCase()} ${uuid}`} onClose={() => onClose(changed.value)}>
      {error.value && <p class="error" role="alert">{error.value}</p>}
      {list.length === 0 && !error.value && <p class="muted">No versions kept.</p>}
      <ol class="history" reversed>
        {[...list].reverse().map((e) => {
          const i = list.indexOf(e);
          const diff = changes(i > 0 ? list[i - 1].record : null, e.record);
          return (
            <li key={e.id} data-entry={e.id}>
              <p><strong>{e.action}</strong> {new Date(e.at).toLocaleString()} by {e.user ?? "the system"}</p>
              {e.action !== "delete" && diff.length > 0 && (
                <table class="diff"><tbody>{diff.map(([k, a, b]) => <tr key={k}><th>{def.fields[k]?.label ?? k}</th><td class="old">{show(a)}</td><td class="new">{show(b)}</td></tr>)}</tbody></table>
              )}
              {def.can.restore && e.action !== "delete" && i < list.length - 1 && <button type="button" onClick={() => rollBack(e.id)}>Roll back to this version</button>}
              {def.can.restore && e.action === "delete" && i === list.length - 1 && <button type="button" onClick={() => rollBack()}>Restore</button>}
            </li>
          );
        })}
      </ol>
    </Dialog>
  );
}

/** Records deleted within the last 90 days, each with Restore. */
import { useEffect } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { api, type Envelope } from "../api";
import type { ResourceView } from "../state";
import { t, when } from "../i18n";

type Deleted = { id: number; at: number; user: string | null; uuid: string; record: Record<string, unknown> };

export function DeletedList({ def, onRestored }: { def: ResourceView; onRestored: () => void }) {
  const list = useSignal<Deleted[]>([]);
  const error = useSignal("");
  const load = () => api<Envelope & { deleted: Deleted[] }>("GET", `/.deleted/${def.name}`).then((r) => (list.value = r.body.deleted)).catch((e) => (error.value = e.message));
  useEffect(() => { void load(); }, [def.name]);
  const restore = async (uuid: string) => {
    try {
      await api("POST", `/${def.name}/${uuid}/restore`, {});
      await load();
      onRestored();
    } catch (e) {
      error.value = (e as Error).message;
    }
  };
  const title = (r: Record<string, unknown>) => String(def.columns.map((c) => r[c]).find((v) => typeof v === "string" && v) ?? "");
  return (
    <section class="deleted" aria-label={t("Deleted records")}>
      <h2>{t("Deleted in the last 90 days")}</h2>
      {error.value && <p class="error" role="alert">{error.value}</p>}
      {list.value.length === 0 ? <p class="muted">{t("Nothing deleted.")}</p> : (
        <ul>
          {list.value.map((d) => (
            <li key={d.uuid} data-uuid={d.uuid}>
              {title(d.record) || d.uuid} <span class="muted">{t("deleted {when}", { when: when(d.at) })}</span>
              {def.can.restore && <button type="button" onClick={() => restore(d.uuid)}>{t("Restore")}</button>}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

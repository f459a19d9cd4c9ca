/** Import a CSV, TSV or JSON file into the resource: upload progress, then per-row errors. */
import { useSignal } from "@preact/signals";
import type { ResourceView } from "../state";
import { Dialog } from "./Dialog";
import { t } from "../i18n";

type Stats = { imported?: number; created?: number; updated?: number; errors?: number; total?: number };
type Answer = { code: number; success: boolean; message?: string; details?: string; stats?: Stats; errors_detail?: { row: number; field: string | null; reason: string; uuid?: string }[] };

/** `onImported` runs as soon as rows went in, so the list behind the dialog counts them at once. */
export function ImportDialog({ def, onImported, onClose }: { def: ResourceView; onImported: () => void; onClose: () => void }) {
  const progress = useSignal<number | null>(null);
  const answer = useSignal<Answer | null>(null);
  const submit = (e: Event) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    // XMLHttpRequest, not fetch: only it reports upload progress.
    const xhr = new XMLHttpRequest();
    xhr.open("POST", `/api/v1/${def.name}/import`);
    xhr.upload.onprogress = (ev) => { if (ev.lengthComputable) progress.value = Math.round((ev.loaded / ev.total) * 100); };
    xhr.onload = () => {
      progress.value = 100;
      try {
        answer.value = JSON.parse(xhr.responseText) as Answer;
        if ((answer.value.stats?.created ?? 0) + (answer.value.stats?.updated ?? 0) > 0) onImported();
      } catch {
        answer.value = { code: xhr.status, success: false, message: xhr.statusText };
      }
    };
    xhr.onerror = () => (answer.value = { code: 0, success: false, message: t("the upload failed") });
    progress.value = 0;
    answer.value = null;
    xhr.send(form);
  };
  const a = answer.value;
  return (
    <Dialog title={t("Import {name}", { name: def.label.plural.toLowerCase(), Name: def.label.plural })} onClose={onClose}>
      <form onSubmit={submit}>
        <label>{t("File (CSV, TSV or JSON)")}<input type="file" name="file" accept=".csv,.tsv,.json,text/csv,application/json" required /></label>
        <button type="submit" class="primary" disabled={progress.value !== null && !a}>{t("Import")}</button>
      </form>
      {progress.value !== null && !a && <progress max={100} value={progress.value} aria-label={t("Upload progress")} />}
      {a && (
        <div class="import-result" role="status">
          {a.stats ? (
            <p>{t("{created} created, {updated} updated, {errors} rows with errors.", { created: a.stats.created ?? 0, updated: a.stats.updated ?? 0, errors: a.stats.errors ?? 0 })}</p>
          ) : <p class="error">{a.details || a.message}</p>}
          {a.errors_detail && a.errors_detail.length > 0 && (
            <table class="errors"><thead><tr><th>{t("Row")}</th><th>{t("Field")}</th><th>{t("Problem")}</th></tr></thead>
              <tbody>{a.errors_detail.map((d, i) => <tr key={i}><td>{d.row}</td><td>{d.field ?? ""}</td><td>{d.reason}</td></tr>)}</tbody></table>
          )}
        </div>
      )}
    </Dialog>
  );
}

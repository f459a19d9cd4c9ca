/**
 * A `group` field: repeatable rows of its sub-fields, added, removed and reordered; each row is its
 * own model, and errors are found by path (`sections[1].heading`).
 */
import type { FunctionComponent } from "preact";
import { useRef } from "preact/hooks";
import { Icon } from "../components/Icon";
import type { FieldProps } from "./types";
import { t } from "../i18n";

type Row = Record<string, unknown>;

export function GroupField(p: FieldProps & { Editor: FunctionComponent<FieldProps & { languages: string[] }> }) {
  const { id, field, value, onChange, readOnly, path, errors, Editor, label } = p;
  const rows: Row[] = Array.isArray(value) ? (value as Row[]) : [];
  const subs = Object.entries(field.fields ?? {});
  // Changes in one tick (a slug following its source in a row) build on each other.
  const latest = useRef(rows);
  latest.current = rows;
  const set = (i: number, next: Row) => {
    latest.current = latest.current.map((r, j) => (j === i ? next : r));
    onChange(latest.current);
  };
  const move = (i: number, by: number) => {
    const next = [...rows];
    [next[i], next[i + by]] = [next[i + by], next[i]];
    onChange(next);
  };
  const empty = (): Row => Object.fromEntries(subs.map(([k, f]) => [k, f.type === "boolean" ? false : f.multi || f.type === "group" || f.type === "gallery" ? [] : f.type === "number" ? null : ""]));
  return (
    <div id={id} class="group" role="group" aria-label={label ?? field.label}>
      <ol>
        {rows.map((row, i) => (
          <li key={i} class="group-row" data-row={i}>
            <div class="row-tools">
              <span class="muted">{i + 1}</span>
              {!readOnly && <>
                <button type="button" class="link" aria-label={t("Move row {n} up", { n: i + 1 })} disabled={i === 0} onClick={() => move(i, -1)}><Icon name="up" /></button>
                <button type="button" class="link" aria-label={t("Move row {n} down", { n: i + 1 })} disabled={i === rows.length - 1} onClick={() => move(i, 1)}><Icon name="down" /></button>
                <button type="button" class="link danger" aria-label={t("Remove row {n}", { n: i + 1 })} onClick={() => onChange(rows.filter((_, j) => j !== i))}><Icon name="close" /></button>
              </>}
            </div>
            {subs.map(([k, f]) => {
              const subPath = `${path}[${i}].${k}`;
              return (
                <div key={k} class={`field type-${f.type} ${f.wrapper_class ?? ""}`} data-field={k}>
                  <label for={`${id}-${i}-${k}`}>{f.label}{f.required && <span aria-hidden="true"> *</span>}</label>
                  <Editor {...p} label={undefined} id={`${id}-${i}-${k}`} name={k} field={f} value={row[k]} model={row} path={subPath} error={errors[subPath]} languages={p.def.languages}
                    onChange={(v) => set(i, { ...latest.current[i], [k]: v })} setField={(n, v) => set(i, { ...latest.current[i], [n]: v })} />
                  {errors[subPath] && <p class="error" role="alert">{errors[subPath]}</p>}
                </div>
              );
            })}
          </li>
        ))}
      </ol>
      {errors[path] && <p class="error" role="alert">{errors[path]}</p>}
      {!readOnly && <button type="button" onClick={() => onChange([...rows, empty()])}>{t("Add row")}</button>}
    </div>
  );
}

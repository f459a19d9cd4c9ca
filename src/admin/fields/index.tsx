/** The editor of each field type, and the wrappers for `multi` and `i18n` values. */
import type { FunctionComponent } from "preact";
import type { FieldProps } from "./types";
import { TextField } from "./TextField";
import { EmailField } from "./EmailField";
import { UrlField } from "./UrlField";
import { SlugField } from "./SlugField";
import { ColorField } from "./ColorField";
import { DateField } from "./DateField";
import { NumberField } from "./NumberField";
import { TextareaField } from "./TextareaField";
import { BooleanField } from "./BooleanField";
import { SelectField } from "./SelectField";
import { PasswordField } from "./PasswordField";
import { JsonField } from "./JsonField";

const EDITORS: Record<string, FunctionComponent<FieldProps>> = {
  text: TextField, email: EmailField, url: UrlField, slug: SlugField, color: ColorField, date: DateField,
  number: NumberField, textarea: TextareaField, boolean: BooleanField, select: SelectField, password: PasswordField,
};

function MultiField(p: FieldProps & { Editor: FunctionComponent<FieldProps> }) {
  const list = Array.isArray(p.value) ? p.value : [];
  const set = (i: number, v: unknown) => p.onChange(list.map((x, j) => (j === i ? v : x)));
  return (
    <div class="multi" id={p.id} role="group">
      {list.map((v, i) => (
        <div key={i} class="multi-row">
          <p.Editor {...p} id={`${p.id}-${i}`} value={v} onChange={(x) => set(i, x)} />
          {!p.readOnly && <button type="button" class="link" aria-label="Remove" onClick={() => p.onChange(list.filter((_, j) => j !== i))}>✕</button>}
        </div>
      ))}
      {!p.readOnly && <button type="button" class="link" onClick={() => p.onChange([...list, ""])}>Add</button>}
    </div>
  );
}

export function FieldEditor(p: FieldProps & { languages: string[] }) {
  const { field } = p;
  const Editor = EDITORS[field.type] ?? JsonField;
  if (field.i18n && p.languages.length && EDITORS[field.type]) {
    const o = p.value && typeof p.value === "object" && !Array.isArray(p.value) ? (p.value as Record<string, unknown>) : {};
    return (
      <div class="i18n" id={p.id} role="group">
        {p.languages.map((l) => (
          <label key={l} class="lang"><span>{l}</span>
            <Editor {...p} field={{ ...field, i18n: false }} id={`${p.id}-${l}`} value={o[l]} onChange={(v) => p.onChange({ ...o, [l]: v })} />
          </label>
        ))}
      </div>
    );
  }
  if (field.multi && field.type !== "select" && EDITORS[field.type]) return <MultiField {...p} Editor={Editor} />;
  return <Editor {...p} />;
}

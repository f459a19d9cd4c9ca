/**
 * The editor of each field type (one component per type, named for it), and the wrappers for
 * `multi` values and `i18n` values (a tab per language, with Translate when a provider is set).
 */
import type { FunctionComponent } from "preact";
import { useRef } from "preact/hooks";
import { useSignal } from "@preact/signals";
import type { FieldProps } from "./types";
import { TextField } from "./TextField";
import { TextareaField } from "./TextareaField";
import { lazyField } from "./lazy";
import { SlugField } from "./SlugField";
import { BooleanField } from "./BooleanField";
import { DateField } from "./DateField";
import { EmailField } from "./EmailField";
import { UrlField } from "./UrlField";
import { PasswordField } from "./PasswordField";
import { ImageField } from "./ImageField";
import { FileField } from "./FileField";
import { UploadField } from "./UploadField";
import { GalleryField } from "./GalleryField";
import { SelectField } from "./SelectField";
import { NumberField } from "./NumberField";
import { ColorField } from "./ColorField";
import { LocationPickerField } from "./LocationPickerField";
import { GroupField } from "./GroupField";
import { JsonField } from "./JsonField";
import { Icon } from "../components/Icon";
import { api, ApiError, type Envelope } from "../api";
import { t } from "../i18n";

type EditorProps = FieldProps & { languages: string[] };

const HtmlField = lazyField(() => import("./HtmlField").then((m) => m.HtmlField));

const EDITORS: Record<string, FunctionComponent<FieldProps>> = {
  text: TextField, textarea: TextareaField, html: HtmlField, slug: SlugField, boolean: BooleanField, date: DateField,
  email: EmailField, url: UrlField, password: PasswordField, image: ImageField, file: FileField, upload: UploadField,
  gallery: GalleryField, select: SelectField, number: NumberField, color: ColorField, "location-picker": LocationPickerField,
};
/** Types whose value is already a list: `multi` does not wrap them again. */
const LISTS = new Set(["select", "gallery", "group"]);

/** A list of single values: each entry's editor is named for the field and its place ("Tags 2"). */
function MultiField(p: FieldProps & { Editor: FunctionComponent<FieldProps> }) {
  const list = Array.isArray(p.value) ? p.value : [];
  const set = (i: number, v: unknown) => p.onChange(list.map((x, j) => (j === i ? v : x)));
  const name = p.label ?? p.field.label;
  return (
    <div class="multi" id={p.id} role="group" aria-label={name}>
      {list.map((v, i) => (
        <div key={i} class="multi-row">
          <p.Editor {...p} id={`${p.id}-${i}`} label={`${name} ${i + 1}`} value={v} path={`${p.path}[${i}]`} onChange={(x) => set(i, x)} />
          {!p.readOnly && <button type="button" class="link" aria-label={t("Remove {name} {n}", { name, n: i + 1 })} onClick={() => p.onChange(list.filter((_, j) => j !== i))}><Icon name="close" /></button>}
        </div>
      ))}
      {!p.readOnly && <button type="button" class="link" onClick={() => p.onChange([...list, p.field.type === "number" ? null : ""])}>{t("Add")}</button>}
    </div>
  );
}

/**
 * A translated value: a tab per language (the WAI-ARIA tabs pattern: arrow keys, Home and End move
 * and select, only the selected tab is in the tab order), each language's editor named for the
 * field and the language ("Title (de)").
 */
function I18nField(p: EditorProps & { Inner: FunctionComponent<FieldProps> }) {
  const tab = useSignal(p.languages[0]);
  const tabs = useRef<HTMLDivElement>(null);
  const busy = useSignal(false);
  const problem = useSignal("");
  const o = p.value && typeof p.value === "object" && !Array.isArray(p.value) ? (p.value as Record<string, unknown>) : {};
  // Several languages may change in one tick (slugs following a filled-in title): each change
  // builds on the one before, not on the value this render saw.
  const latest = useRef(o);
  latest.current = o;
  const setLanguage = (l: string, v: unknown) => {
    latest.current = { ...latest.current, [l]: v };
    p.onChange(latest.current);
  };
  const translate = async () => {
    const from = tab.value;
    const text = o[from];
    if (typeof text !== "string" || !text.trim()) return (problem.value = t("Write the {language} text first.", { language: from }));
    busy.value = true;
    problem.value = "";
    try {
      const r = await api<Envelope & { translations: Record<string, string> }>("POST", "/openai/translate", { resource: p.def.name, field: p.name, uuid: p.uuid ?? undefined, from, text });
      latest.current = { ...latest.current, ...r.body.translations };
      p.onChange(latest.current);
    } catch (e) {
      problem.value = (e as ApiError).message;
    } finally {
      busy.value = false;
    }
  };
  const onTabKey = (e: KeyboardEvent, i: number) => {
    const n = p.languages.length;
    const to = ({ ArrowRight: (i + 1) % n, ArrowLeft: (i + n - 1) % n, Home: 0, End: n - 1 } as Record<string, number>)[e.key];
    if (to === undefined) return;
    e.preventDefault();
    tab.value = p.languages[to];
    tabs.current?.querySelector<HTMLElement>(`[data-tab="${p.languages[to]}"]`)?.focus();
  };
  const name = p.label ?? p.field.label;
  return (
    <div class="i18n" id={p.id} role="group" aria-label={name}>
      {/* A tablist holds tabs only: Translate sits beside it. */}
      <div class="i18n-head" style={{ display: "flex", gap: "4px", flexWrap: "wrap", alignItems: "flex-start" }}>
        <div role="tablist" ref={tabs} aria-label={t("{name}: languages", { name })}>
          {p.languages.map((l, i) => (
            <button key={l} type="button" role="tab" id={`${p.id}-tab-${l}`} data-tab={l} aria-selected={tab.value === l} aria-controls={`${p.id}-panel-${l}`}
              tabIndex={tab.value === l ? 0 : -1} onClick={() => (tab.value = l)} onKeyDown={(e) => onTabKey(e, i)}>{l}</button>
          ))}
        </div>
        {p.def.ai && !p.readOnly && p.field.type !== "slug" && <button type="button" class="translate" disabled={busy.value} onClick={translate}>{busy.value ? t("Translating…") : t("Translate from {language}", { language: tab.value })}</button>}
      </div>
      {p.languages.map((l) => (
        <div key={l} role="tabpanel" id={`${p.id}-panel-${l}`} aria-labelledby={`${p.id}-tab-${l}`} hidden={tab.value !== l} data-language={l}>
          <p.Inner {...p} field={{ ...p.field, i18n: false }} id={`${p.id}-${l}`} label={`${name} (${l})`} language={l} path={`${p.path}.${l}`} value={o[l]} onChange={(v) => setLanguage(l, v)} />
        </div>
      ))}
      {problem.value && <p class="error" role="alert">{problem.value}</p>}
    </div>
  );
}

/** One stable `multi` wrapper per editor (a new component per render would lose focus on typing). */
const multiOf = new Map<FunctionComponent<FieldProps>, FunctionComponent<FieldProps>>();
function multi(Editor: FunctionComponent<FieldProps>): FunctionComponent<FieldProps> {
  let m = multiOf.get(Editor);
  if (!m) multiOf.set(Editor, (m = (q: FieldProps) => <MultiField {...q} Editor={Editor} />));
  return m;
}

export function FieldEditor(p: EditorProps) {
  const { field } = p;
  if (field.type === "group") return <GroupField {...p} Editor={FieldEditor} />;
  if (field.type === "select" && !field.i18n) return <SelectField {...p} Editor={FieldEditor} />;
  const Editor = EDITORS[field.type] ?? JsonField;
  const Inner = field.multi && !LISTS.has(field.type) ? multi(Editor) : Editor;
  if (field.i18n && p.languages.length) return <I18nField {...p} Inner={Inner} />;
  return <Inner {...p} />;
}

/**
 * A form's errors listed above its fields, each a link to the field it names, and the way there:
 * after a failed save the first invalid field (in the order the form shows them) gets focus and is
 * scrolled into view, on a hidden language tab too. A trial's editor met a 422 with the message
 * off screen and the page still at the Save button.
 */
import type { FieldView } from "../state";
import { t, tn } from "../i18n";

/** The id of the control a field path names: `sections[0].n` → `field-sections-0-n`. */
export const fieldId = (path: string) => `field-${path.replace(/\[(\d+)\]/g, "-$1").replace(/\./g, "-")}`;

const FOCUSABLE = "input:not([type=hidden]), select, textarea, [contenteditable=true], button, [tabindex]";

function elementOf(path: string): HTMLElement | null {
  const exact = document.getElementById(fieldId(path));
  if (exact) return exact;
  const top = path.split(/[.[]/)[0];
  return document.querySelector<HTMLElement>(`[data-field="${CSS.escape(top)}"]`);
}

/** Focuses and shows the control of a field path, opening the language tab it sits on. */
export function focusField(path: string): void {
  const el = elementOf(path);
  if (!el) return;
  const panel = el.closest<HTMLElement>("[role=tabpanel][hidden]");
  const tab = panel && document.getElementById(panel.getAttribute("aria-labelledby") ?? "");
  const show = () => {
    const target = el.matches(FOCUSABLE) ? el : el.querySelector<HTMLElement>(FOCUSABLE);
    target?.focus({ preventScroll: true });
    (target ?? el).scrollIntoView({ block: "center" });
  };
  if (!tab) return show();
  // The tab's panel is shown by the render the click queues; a hidden control cannot take focus
  // before it, and a microtask queued after the click runs after that render.
  tab.click();
  queueMicrotask(show);
}

/** The paths in the order their fields appear in the form. */
export function inFormOrder(paths: string[]): string[] {
  const pos = new Map(paths.map((p) => [p, elementOf(p)]));
  return [...paths].sort((a, b) => {
    const x = pos.get(a), y = pos.get(b);
    if (!x || !y) return x ? -1 : y ? 1 : 0;
    return x === y ? 0 : x.compareDocumentPosition(y) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1;
  });
}

/** `sections[0].n` as people read it: "Sections, row 1, N". */
export function pathLabel(fields: Record<string, FieldView>, path: string): string {
  const parts = path.match(/[^.[\]]+|\[\d+\]/g) ?? [path];
  const out: string[] = [];
  let level: Record<string, FieldView> | undefined = fields;
  let current: FieldView | undefined;
  for (const part of parts) {
    const row = /^\[(\d+)\]$/.exec(part);
    if (row) { out.push(t("row {n}", { n: Number(row[1]) + 1 })); continue; }
    const f: FieldView | undefined = level?.[part];
    if (f) { out.push(f.label); current = f; level = f.fields; }
    else if (current?.i18n) out.push(`(${part})`);
    else out.push(part);
  }
  return out.join(", ").replace(/, \(/g, " (");
}

export function ErrorSummary({ fields, errors }: { fields: Record<string, FieldView>; errors: Record<string, string> }) {
  const paths = inFormOrder(Object.keys(errors).filter(Boolean));
  if (!paths.length) return null;
  return (
    <div class="error-summary" role="alert">
      <h2>{tn(paths.length, "One field needs attention", "{n} fields need attention")}</h2>
      <ul>
        {paths.map((p) => (
          <li key={p}><a href={`#${fieldId(p)}`} onClick={(e) => { e.preventDefault(); focusField(p); }}>{pathLabel(fields, p)}: {errors[p]}</a></li>
        ))}
      </ul>
    </div>
  );
}

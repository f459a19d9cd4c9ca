/**
 * The html editor's link dialog: type an address, or find a page of the site — record pages and
 * route files from `/api/v1/.pages`, searched as you type by URL and title — and pick it: the link
 * points at the page's URL path. An empty address removes the link. Placed at the end of the body,
 * so its form is never nested in the record's form (its Enter and Ctrl+S stay its own).
 */
import { createPortal } from "preact";
import { useEffect, useRef } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { ApiError } from "../api";
import { Dialog } from "./Dialog";
import { Combobox, type ComboOption } from "./Combobox";
import { kindName, listPages, resourceLabel, type SitePage } from "./site-pages";
import { t, tn } from "../i18n";

const PAGE = 20;
const DEBOUNCE_MS = 150;

/** A page as the list shows it: its title (a route file: its kind), then its URL. */
const describe = (p: SitePage) => `${p.kind === "record" ? p.title || t("(no title)") : kindName(p.kind)} — ${p.url}${p.kind === "record" ? ` (${resourceLabel(p.resource)}${p.language ? `, ${p.language}` : ""})` : ""}`;

export function LinkDialog({ current, onApply, onClose }: { current: string; onApply: (href: string, text?: string) => void; onClose: () => void }) {
  const href = useSignal(current);
  const text = useSignal("");
  const open = useSignal(false);
  const found = useSignal<SitePage[]>([]);
  const total = useSignal(0);
  /** null: searching is possible; else why not (no permission, an error). */
  const unavailable = useSignal<string | null>(null);
  const forbidden = useSignal(false);
  const pending = useSignal(false);
  const seq = useRef(0);
  const form = useRef<HTMLFormElement>(null);
  /** The dialog closes first, so that the editor behind it can take the focus back. */
  const apply = (address: string, title?: string) => {
    form.current?.closest("dialog")?.close();
    onApply(address, title);
  };
  const term = text.value.trim();

  useEffect(() => {
    if (!open.value || forbidden.value) return;
    const mine = ++seq.current;
    pending.value = true;
    const timer = setTimeout(async () => {
      try {
        // Endpoints are no pages to link to: kept out here (they are few).
        const r = await listPages({ search: term, limit: PAGE });
        if (mine !== seq.current) return;
        found.value = r.pages.filter((p) => p.kind !== "endpoint");
        total.value = r.total;
        unavailable.value = null;
      } catch (e) {
        if (mine !== seq.current) return;
        found.value = [];
        if (e instanceof ApiError && e.status === 403) forbidden.value = true;
        else unavailable.value = t("Could not search the pages: {why}", { why: (e as Error).message });
      }
      pending.value = false;
    }, term ? DEBOUNCE_MS : 0);
    return () => clearTimeout(timer);
  }, [open.value, term]);

  const options: ComboOption[] = found.value.map((p) => ({ key: p.id, label: describe(p) }));
  const n = options.length;
  const status = pending.value && !n ? t("Searching…")
    : n === 0 ? (term ? t("No page matches “{text}”.", { text: term }) : t("The site has no pages to link to yet."))
    : total.value > n ? t("{n} of {total} pages; type to narrow.", { n, total: total.value })
    : tn(n, "{n} page.", "{n} pages.");
  const pick = (o: ComboOption) => {
    const p = found.value.find((x) => x.id === o.key);
    if (p) apply(p.url, p.kind === "record" ? p.title || undefined : undefined);
  };

  return createPortal(
    <Dialog title={current ? t("Edit link") : t("Add a link")} onClose={onClose}>
      <form ref={form} class="link-dialog" onSubmit={(e) => { e.preventDefault(); apply(href.value); }}>
        <div class="field">
          <label for="link-href">{t("Link address (empty removes the link)")}</label>
          <input id="link-href" type="text" inputMode="url" autocomplete="off" spellcheck={false} placeholder="https://" value={href.value}
            onInput={(e) => (href.value = (e.target as HTMLInputElement).value)} />
        </div>
        {!forbidden.value && (
          <div class="field">
            <label for="link-page">{t("Or link to a page of the site")}</label>
            <div class="picker">
              <Combobox id="link-page" label={t("Pages of the site")} text={text.value} options={options} open={open.value}
                onText={(v) => (text.value = v)} onOpen={(o) => (open.value = o)} onPick={pick} status={status}
                note={total.value > n ? status : undefined} placeholder={t("Type part of a title or URL…")} />
            </div>
            {unavailable.value && <p class="error">{unavailable.value}</p>}
          </div>
        )}
        <div class="link-actions">
          <button type="submit" class="primary">{t("Set link")}</button>
          {current && <button type="button" class="danger" onClick={() => apply("")}>{t("Remove link")}</button>}
          <button type="button" onClick={() => form.current?.closest("dialog")?.close()}>{t("Cancel")}</button>
        </div>
      </form>
    </Dialog>,
    document.body,
  );
}

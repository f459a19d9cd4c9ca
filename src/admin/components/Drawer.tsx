/**
 * A side panel dialog: the browser's modal <dialog> (focus stays inside, Escape closes, the page
 * behind is inert) drawn at the right edge. It is placed at the end of the body, so a form inside
 * it is never nested in the page's form: its submit, Enter and Ctrl+S stay its own.
 */
import { createPortal, type ComponentChildren } from "preact";
import { useEffect, useId, useRef } from "preact/hooks";
import { Icon } from "./Icon";
import { t } from "../i18n";

export function Drawer({ title, onClose, children }: { title: string; onClose: () => void; children: ComponentChildren }) {
  const ref = useRef<HTMLDialogElement>(null);
  const heading = useId();
  useEffect(() => {
    const d = ref.current;
    d?.showModal();
    return () => { if (d?.open) d.close(); };
  }, []);
  return createPortal(
    <dialog ref={ref} class="drawer" aria-labelledby={heading} onClose={onClose}>
      <header>
        <h2 id={heading}>{title}</h2>
        <button type="button" class="link" aria-label={t("Close")} onClick={() => ref.current?.close()}><Icon name="close" /></button>
      </header>
      {children}
    </dialog>,
    document.body,
  );
}

/** Closes the drawer around an element (its own Cancel button, or after its work is done). */
export const closeDrawerOf = (el: Element | null) => el?.closest("dialog")?.close();

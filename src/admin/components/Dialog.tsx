/** A modal dialog (the browser's own <dialog>: focus stays inside, Escape closes). */
import type { ComponentChildren } from "preact";
import { useEffect, useRef } from "preact/hooks";
import { t } from "../i18n";
import { Icon } from "./Icon";

export function Dialog({ title, onClose, children }: { title: string; onClose: () => void; children: ComponentChildren }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    ref.current?.showModal();
  }, []);
  return (
    <dialog ref={ref} onClose={onClose} aria-label={title}>
      <header><h2>{title}</h2><button type="button" class="link" onClick={() => ref.current?.close()} aria-label={t("Close")}><Icon name="close" /></button></header>
      {children}
    </dialog>
  );
}

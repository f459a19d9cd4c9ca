/**
 * A row's actions behind one button (the WAI-ARIA menu button pattern): one stop in the tab order
 * per row instead of six, and room for them on a phone. Arrow keys move between the items, Escape
 * and Tab close the menu, a click elsewhere closes it.
 */
import type { ComponentChildren } from "preact";
import { useEffect, useLayoutEffect, useRef } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { Icon } from "./Icon";

export type MenuItem = { label: string; href?: string; external?: boolean; danger?: boolean; onSelect?: () => void };

export function RowMenu({ label, items, tabIndex, children }: { label: string; items: MenuItem[]; tabIndex?: number; children?: ComponentChildren }) {
  const open = useSignal(false);
  const root = useRef<HTMLDivElement>(null);
  const button = useRef<HTMLButtonElement>(null);
  const itemEls = () => [...(root.current?.querySelectorAll<HTMLElement>("[role=menuitem]") ?? [])];

  // In the commit that shows the menu: an arrow key pressed right after Enter reaches the items.
  useLayoutEffect(() => {
    if (open.value) itemEls()[0]?.focus();
  }, [open.value]);
  useEffect(() => {
    if (!open.value) return;
    const away = (e: Event) => { if (!root.current?.contains(e.target as Node)) open.value = false; };
    document.addEventListener("pointerdown", away);
    return () => document.removeEventListener("pointerdown", away);
  }, [open.value]);

  const close = (refocus: boolean) => {
    open.value = false;
    if (refocus) button.current?.focus();
  };
  const onMenuKey = (e: KeyboardEvent) => {
    const els = itemEls();
    const i = els.indexOf(document.activeElement as HTMLElement);
    const to = (n: number) => { e.preventDefault(); els[(n + els.length) % els.length]?.focus(); };
    if (e.key === "ArrowDown") to(i + 1);
    else if (e.key === "ArrowUp") to(i - 1);
    else if (e.key === "Home") to(0);
    else if (e.key === "End") to(els.length - 1);
    else if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); close(true); }
    else if (e.key === "Tab") close(false);
  };
  const onButtonKey = (e: KeyboardEvent) => {
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      // The list's own arrow keys move between rows; on the button they open its menu.
      e.preventDefault();
      e.stopPropagation();
      open.value = true;
    }
  };

  return (
    <div class="row-menu" ref={root}>
      <button type="button" ref={button} class="link menu-button" data-stop aria-haspopup="menu" aria-expanded={open.value} aria-label={label} tabIndex={tabIndex}
        onClick={() => (open.value = !open.value)} onKeyDown={onButtonKey}>
        <Icon name="more" />{children}
      </button>
      {open.value && (
        <ul role="menu" aria-label={label} onKeyDown={onMenuKey}>
          {items.map((it) => (
            <li key={it.label} role="none">
              {it.href
                ? <a role="menuitem" tabIndex={-1} href={it.href} target={it.external ? "_blank" : undefined} rel={it.external ? "noopener" : undefined} onClick={() => close(false)}>{it.label}</a>
                : <button type="button" role="menuitem" tabIndex={-1} class={it.danger ? "danger" : undefined} onClick={() => { close(false); it.onSelect?.(); }}>{it.label}</button>}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

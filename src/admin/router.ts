/** Browser history as a signal: links under /admin change it without a page load. */
import { signal } from "@preact/signals";

export type Loc = { path: string; search: string; params: URLSearchParams };

const read = (): Loc => ({ path: window.location.pathname, search: window.location.search, params: new URLSearchParams(window.location.search) });

export const location = signal<Loc>(read());

/** Asked before leaving the page in the app (a form with unsaved changes); false stays. */
let leaveGuard: (() => boolean) | null = null;
export function setLeaveGuard(guard: (() => boolean) | null): void {
  leaveGuard = guard;
}

export function navigate(to: string, replace = false): void {
  if (to === window.location.pathname + window.location.search) return;
  if (leaveGuard && new URL(to, window.location.href).pathname !== window.location.pathname && !leaveGuard()) return;
  if (replace) history.replaceState(null, "", to);
  else history.pushState(null, "", to);
  location.value = read();
  window.scrollTo(0, 0);
}

/** Changes the query string of the current page (replacing the entry: filters are not steps). */
export function setParams(change: (p: URLSearchParams) => void): void {
  const p = new URLSearchParams(window.location.search);
  change(p);
  const s = p.toString();
  navigate(window.location.pathname + (s ? `?${s}` : ""), true);
}

window.addEventListener("popstate", () => (location.value = read()));
document.addEventListener("click", (e) => {
  const a = (e.target as Element | null)?.closest?.("a");
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey || a.target || a.hasAttribute("download")) return;
  const url = new URL(a.href, window.location.href);
  if (url.origin !== window.location.origin || !url.pathname.startsWith("/admin")) return;
  e.preventDefault();
  navigate(url.pathname + url.search);
});

/**
 * Icons bundled with the app as inline SVG: emoji depend on the system's fonts and show as empty
 * boxes where none has them (a trial's chromium on Linux). Decorative by default; give `label`
 * when the icon is the only content of a control.
 */
const PATHS = {
  file: "M6 2h8l4 4v16H6z M14 2v4h4",
  image: "M4 4h16v16H4z M4 16l5-5 4 4 3-3 4 4 M15 9.5a1.5 1.5 0 1 0 0.01 0",
  link: "M10 14a4 4 0 0 0 5.66 0l3-3a4 4 0 0 0-5.66-5.66l-1 1 M14 10a4 4 0 0 0-5.66 0l-3 3a4 4 0 0 0 5.66 5.66l1-1",
  close: "M6 6l12 12 M18 6L6 18",
  check: "M5 12l5 5 9-10",
  cross: "M7 7l10 10 M17 7L7 17",
  pin: "M12 22s7-7.5 7-13a7 7 0 0 0-14 0c0 5.5 7 13 7 13z M12 9.5a1.5 1.5 0 1 0 0.01 0",
  more: "M5 12h.01 M12 12h.01 M19 12h.01",
  lock: "M6 11h12v10H6z M8 11V8a4 4 0 0 1 8 0v3",
  unlock: "M6 11h12v10H6z M8 11V8a4 4 0 0 1 7.75-1.4",
  quote: "M9 7H5v6h4v4H7 M19 7h-4v6h4v4h-2",
  up: "M6 15l6-6 6 6",
  down: "M6 9l6 6 6-6",
  upload: "M12 16V4 M7 9l5-5 5 5 M4 20h16",
  undo: "M9 14L4 9l5-5 M4 9h10a6 6 0 0 1 0 12h-3",
  play: "M4 4h16v16H4z M10 8.5v7l5.5-3.5z",
  archive: "M4 4h16v4H4z M5 8v12h14V8 M10 12h4",
} as const;

export type IconName = keyof typeof PATHS;

export function Icon({ name, label, size = 18 }: { name: IconName; label?: string; size?: number }) {
  return (
    <svg class={`icon icon-${name}`} width={size} height={size} viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width={2}
      stroke-linecap="round" stroke-linejoin="round" role={label ? "img" : undefined} aria-label={label} aria-hidden={label ? undefined : "true"} focusable="false">
      <path d={PATHS[name]} />
    </svg>
  );
}

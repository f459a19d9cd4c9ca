/** A field editor loaded on first use (the html editor is most of the app's code). */
import type { FunctionComponent } from "preact";
import { useEffect } from "preact/hooks";
import { useSignal } from "@preact/signals";
import type { FieldProps } from "./types";
import { t } from "../i18n";

export function lazyField(load: () => Promise<FunctionComponent<FieldProps>>): FunctionComponent<FieldProps> {
  let loaded: FunctionComponent<FieldProps> | null = null;
  let pending: Promise<FunctionComponent<FieldProps>> | null = null;
  return function LazyField(p: FieldProps) {
    const ready = useSignal(loaded);
    useEffect(() => {
      if (!ready.value) void (pending ??= load()).then((c) => (ready.value = loaded = c));
    }, []);
    const C = ready.value;
    return C ? <C {...p} /> : <p class="muted" role="status">{t("Loading editor…")}</p>;
  };
}

/**
 * Copies a text to the clipboard (a key, a secret, recovery codes) and says so. Where the
 * clipboard API is not offered (a page served over plain http from another host) the text is
 * selected in a hidden field and copied the older way.
 */
import { useSignal } from "@preact/signals";
import { t } from "../i18n";

async function copy(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "sr-only";
    document.body.append(area);
    area.select();
    const ok = document.execCommand("copy");
    area.remove();
    return ok;
  }
}

export function CopyButton({ text, label }: { text: string; label: string }) {
  const said = useSignal("");
  const onClick = async () => {
    said.value = (await copy(text)) ? t("Copied.") : t("Could not copy: select the text and copy it yourself.");
    setTimeout(() => (said.value = ""), 4000);
  };
  return (
    <>
      <button type="button" onClick={() => void onClick()}>{label}</button>
      <span role="status" class="copied">{said.value}</span>
    </>
  );
}

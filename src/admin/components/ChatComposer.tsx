/**
 * Where the user writes to the agents: Enter sends, Shift+Enter starts a new line. Typing @ offers
 * the agents the user may ask (arrows choose, Enter or Tab picks, Escape closes the list); a
 * message goes to the agents it mentions, else to the one last involved.
 */
import { useEffect, useId, useLayoutEffect, useRef } from "preact/hooks";
import { useSignal } from "@preact/signals";
import type { Team } from "../chat";
import { t, tn } from "../i18n";

/** The server's bound on a message's length. */
const MAX_TEXT = 8000;

/** Keys that move the caret without typing (typing is told by input). */
const MOVES = new Set(["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End", "PageUp", "PageDown"]);

/** The @word being typed just before the caret, if any (as the server reads mentions). */
function mentionAt(text: string, caret: number): { start: number; word: string } | null {
  const m = /(?:^|[^\w@.])@([a-z0-9_-]*)$/i.exec(text.slice(0, caret));
  return m ? { start: caret - m[1].length - 1, word: m[1].toLowerCase() } : null;
}

export function ChatComposer({ team, busy, onSend }: { team: Team; busy: boolean; onSend: (text: string) => Promise<boolean> }) {
  const id = useId();
  const text = useSignal("");
  const caret = useSignal(0);
  const active = useSignal(0);
  const dismissed = useSignal(false);
  const area = useRef<HTMLTextAreaElement>(null);
  // After the drawer opened (it focuses its first control), the text box takes the focus.
  useEffect(() => { requestAnimationFrame(() => area.current?.focus()); }, []);
  // Where the caret goes once a picked mention is in the box: placed as soon as the box shows the
  // new text, before the next key is handled. Placed on a later frame, it moved back over what
  // was typed meanwhile, and the rest of the message went in behind the mention.
  const caretAfterPick = useRef<number | null>(null);
  useLayoutEffect(() => {
    const to = caretAfterPick.current;
    if (to === null || !area.current) return;
    caretAfterPick.current = null;
    area.current.focus();
    area.current.setSelectionRange(to, to);
  });

  const at = mentionAt(text.value, caret.value);
  const options = at && !dismissed.value ? Object.keys(team).filter((a) => a.startsWith(at.word)) : [];
  const current = Math.min(active.value, Math.max(0, options.length - 1));

  const edited = (el: HTMLTextAreaElement) => {
    text.value = el.value;
    caret.value = el.selectionStart;
    dismissed.value = false;
    active.value = 0;
  };
  const pick = (agent: string) => {
    if (!at) return;
    const before = text.value.slice(0, at.start), after = text.value.slice(caret.value);
    const put = `@${agent} `;
    text.value = before + put + after.replace(/^\s+/, "");
    const to = before.length + put.length;
    caret.value = to;
    caretAfterPick.current = to;
  };
  const send = async () => {
    const words = text.value.trim();
    if (!words || busy) return;
    if (await onSend(words)) text.value = "";
    area.current?.focus();
  };
  const onKeyDown = (e: KeyboardEvent) => {
    if (e.isComposing) return;
    if (options.length) {
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        e.preventDefault();
        active.value = (current + (e.key === "ArrowDown" ? 1 : options.length - 1)) % options.length;
        return;
      }
      if (e.key === "Enter" || e.key === "Tab") {
        e.preventDefault();
        pick(options[current]);
        return;
      }
      if (e.key === "Escape") {
        // The list closes, not the panel.
        e.preventDefault();
        e.stopPropagation();
        dismissed.value = true;
        return;
      }
    }
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      void send();
    }
  };

  return (
    <form class="chat-compose" onSubmit={(e) => { e.preventDefault(); void send(); }}>
      <label for={id} class="sr-only">{t("Message")}</label>
      {options.length > 0 && (
        <ul class="chat-mentions" aria-label={t("Agents to mention")}>
          {options.map((a, i) => (
            <li key={a}>
              <button type="button" tabIndex={-1} class={i === current ? "active" : undefined} aria-current={i === current ? "true" : undefined}
                onMouseDown={(e) => e.preventDefault()} onClick={() => pick(a)}>
                @{a}{team[a] !== a && <span class="muted"> {team[a]}</span>}
              </button>
            </li>
          ))}
        </ul>
      )}
      <p class="sr-only" role="status">{options.length ? tn(options.length, "{n} agent to mention: arrows choose, Enter picks.", "{n} agents to mention: arrows choose, Enter picks.") : ""}</p>
      <textarea id={id} ref={area} rows={3} maxLength={MAX_TEXT} value={text.value} placeholder={t("Ask an agent… (@ names one)")}
        onInput={(e) => edited(e.currentTarget)} onKeyDown={onKeyDown}
        onKeyUp={(e) => { if (MOVES.has(e.key)) caret.value = e.currentTarget.selectionStart; }} onClick={(e) => (caret.value = e.currentTarget.selectionStart)} />
      <div class="chat-send">
        <span class="muted">{t("Enter sends, Shift+Enter starts a new line.")}</span>
        <button type="submit" class="primary" disabled={busy}>{t("Send")}</button>
      </div>
    </form>
  );
}

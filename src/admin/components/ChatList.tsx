/**
 * The user's conversations with agents, as the server lists them (last changed first): title, the
 * last words, unread replies, a run at work.
 */
import { useEffect } from "preact/hooks";
import { useSignal } from "@preact/signals";
import type { Envelope } from "../api";
import { chat, chatTeam, refreshUnread, type ConversationSummary, type Team } from "../chat";
import { Icon } from "./Icon";
import { t, tn, when } from "../i18n";

export function ChatList({ onOpen }: { onOpen: (uuid: string | null) => void }) {
  const list = useSignal<ConversationSummary[] | null>(null);
  const error = useSignal("");
  const load = async () => {
    try {
      const r = await chat<Envelope & { conversations: ConversationSummary[]; team: Team }>("list");
      list.value = r.conversations;
      chatTeam.value = r.team;
    } catch (e) {
      error.value = (e as Error).message;
    }
  };
  useEffect(() => { void load(); }, []);
  const remove = async (c: ConversationSummary) => {
    if (!confirm(t("Delete the conversation “{title}”?", { title: c.title || t("Untitled") }))) return;
    try {
      await chat("delete", { uuid: c.uuid });
      list.value = (list.value ?? []).filter((x) => x.uuid !== c.uuid);
      void refreshUnread();
    } catch (e) {
      error.value = (e as Error).message;
    }
  };
  const who = (from: string) => (from === "user" ? t("You") : chatTeam.value[from] ?? from);
  return (
    <div class="chat-list">
      <p><button type="button" class="primary" onClick={() => onOpen(null)}>{t("New conversation")}</button></p>
      {error.value && <p class="error" role="alert">{error.value}</p>}
      {list.value === null && !error.value && <p role="status">{t("Loading…")}</p>}
      {list.value?.length === 0 && <p class="muted">{t("No conversations yet. Ask an agent to find, change or explain records for you.")}</p>}
      {list.value && list.value.length > 0 && (
        <ul class="chat-conversations" aria-label={t("Conversations")}>
          {list.value.map((c) => (
            <li key={c.uuid} data-conversation={c.uuid} class={c.unread ? "unread" : undefined}>
              <button type="button" class="chat-pick" onClick={() => onOpen(c.uuid)}>
                <span class="chat-title">{c.title || t("Untitled")}</span>
                {c.unread > 0 && <span class="badge">{tn(c.unread, "{n} unread", "{n} unread")}</span>}
                {c.waiting && <span class="chat-waiting">{t("working…")}</span>}
                {c.last && <span class="chat-last muted">{who(c.last.from)}: {c.last.text}</span>}
                <time class="muted" dateTime={new Date(c.updated_at).toISOString()}>{when(c.updated_at)}</time>
              </button>
              <button type="button" class="link danger icon-button" aria-label={t("Delete the conversation “{title}”", { title: c.title || t("Untitled") })} onClick={() => void remove(c)}>
                <Icon name="close" />
              </button>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/**
 * The top bar's way into the chat with AI agents, for users who may chat (a `chat-<agent>`
 * permission and an agent to talk to): a button with the count of unread replies that opens the
 * chat panel. Hidden when the server refuses the chat.
 */
import { useEffect } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { chatAccess, refreshUnread, unreadCount, watchUnread } from "../chat";
import { ChatPanel } from "./ChatPanel";
import { t, tn } from "../i18n";

export function ChatButton() {
  const open = useSignal(false);
  useEffect(() => watchUnread(), []);
  if (chatAccess.value !== "yes") return null;
  const { unread, waiting } = unreadCount.value;
  return (
    <>
      <button type="button" class="chat-open" aria-haspopup="dialog" aria-expanded={open.value} onClick={() => (open.value = true)}>
        {t("Assistant")}
        {unread > 0 && <><span class="badge" aria-hidden="true">{unread}</span><span class="sr-only">{tn(unread, "{n} unread reply", "{n} unread replies")}</span></>}
        {unread === 0 && waiting > 0 && <><span class="dot" aria-hidden="true" /><span class="sr-only">{t("an agent is working")}</span></>}
      </button>
      {open.value && <ChatPanel onClose={() => { open.value = false; void refreshUnread(); }} />}
    </>
  );
}

/**
 * The chat with AI agents in a drawer over the page: the list of conversations, or one of them. The
 * conversation last shown is shown again when the panel opens. A link to a record closes the panel
 * on the way there, so the record is what the user sees.
 */
import { signal } from "@preact/signals";
import { me } from "../state";
import { closeDrawerOf, Drawer } from "./Drawer";
import { ChatList } from "./ChatList";
import { ChatConversation } from "./ChatConversation";
import { t } from "../i18n";

/**
 * What the panel shows: the list (undefined), a new conversation (null), or a conversation; `user`
 * is whose it was (another user signed in since starts at the list).
 */
const shown = signal<{ user: string | null; uuid: string | null | undefined }>({ user: null, uuid: undefined });
/** Changes when the user opens another conversation: the conversation view starts afresh. */
const opened = signal(0);

function show(uuid: string | null | undefined) {
  shown.value = { user: me.value?.uuid ?? null, uuid };
  opened.value++;
}

function leaveForLink(e: MouseEvent) {
  const a = (e.target as Element | null)?.closest?.("a");
  if (a && new URL(a.href, window.location.href).pathname.startsWith("/admin")) closeDrawerOf(a);
}

export function ChatPanel({ onClose }: { onClose: () => void }) {
  const uuid = shown.value.user === me.value?.uuid ? shown.value.uuid : undefined;
  return (
    <Drawer title={t("Assistant")} onClose={onClose}>
      <div class="chat" onClick={leaveForLink}>
        {uuid === undefined
          ? <ChatList onOpen={show} />
          : <ChatConversation key={opened.value} uuid={uuid} onBack={() => show(undefined)} onCreated={(u) => (shown.value = { ...shown.value, uuid: u })} />}
      </div>
    </Drawer>
  );
}

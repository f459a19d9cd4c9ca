/**
 * One conversation with agents: its messages, the runs still at work with their replies streaming
 * in (`events`), and the box to write in. Opened, it is marked read, and so is each reply that
 * arrives while it is shown. Where the stream fails, `get` is asked every 2 s while a run works.
 * `uuid` null: a new conversation, which the first message creates.
 */
import { useEffect, useRef } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { chat, chatTeam, followConversation, getConversation, refreshUnread, stillWorking, type ConversationView, type LiveStep, type Message, type Team } from "../chat";
import type { Envelope } from "../api";
import { ChatMessage } from "./ChatMessage";
import { ChatRun, type Streamed } from "./ChatRun";
import { ChatComposer } from "./ChatComposer";
import { t } from "../i18n";

const POLL_MS = 2000;
/** Closer to the end than this, the log follows what arrives. */
const STICK_PX = 48;

export function ChatConversation({ uuid: initial, onBack, onCreated }: { uuid: string | null; onBack: () => void; onCreated: (uuid: string) => void }) {
  const uuid = useRef(initial);
  const view = useSignal<ConversationView | null>(null);
  const streams = useSignal<Record<string, Streamed>>({});
  const error = useSignal("");
  const sending = useSignal(false);
  const stream = useRef<{ close(): void } | null>(null);
  const poll = useRef<ReturnType<typeof setTimeout> | null>(null);
  const gone = useRef(false);
  /** The newest reply marked read. */
  const readUpTo = useRef(0);
  const root = useRef<HTMLDivElement>(null);
  const stick = useRef(true);

  const markRead = (v: ConversationView) => {
    const newest = v.messages.findLast((m) => m.from !== "user")?.at ?? 0;
    if (gone.current || newest <= readUpTo.current) return;
    readUpTo.current = newest;
    void chat("read", { uuid: v.uuid }).then(refreshUnread, () => undefined);
  };
  const show = (v: ConversationView) => {
    if (gone.current) return;
    view.value = v;
    chatTeam.value = v.team;
    // A run that no longer works has replied (its message is in the view) or failed: its stream is done.
    const working = new Set(v.working.filter((w) => w.status === "working").map((w) => w.run));
    streams.value = Object.fromEntries(Object.entries(streams.value).filter(([run]) => working.has(run)));
    markRead(v);
  };
  const streamed = (run: string, change: (s: Streamed) => Streamed) => {
    streams.value = { ...streams.value, [run]: change(streams.value[run] ?? { text: "", steps: [] }) };
  };
  const asked = () => {
    poll.current = setTimeout(async () => {
      poll.current = null;
      if (gone.current || !uuid.current) return;
      try {
        show(await getConversation(uuid.current));
      } catch (e) {
        error.value = (e as Error).message;
      }
      if (stillWorking(view.value)) asked();
    }, POLL_MS);
  };
  const follow = () => {
    if (gone.current || !uuid.current || stream.current || poll.current) return;
    stream.current = followConversation(uuid.current, {
      state: show,
      text: (run, _agent, delta) => streamed(run, (s) => ({ ...s, text: s.text + delta })),
      step: (run, _agent, step: LiveStep) => streamed(run, (s) => ({ ...s, steps: [...s.steps, step] })),
      done: (run, message: Message) => {
        const v = view.value;
        if (!v) return;
        const messages = v.messages.some((m) => m.id === message.id) ? v.messages : [...v.messages, message];
        show({ ...v, messages, working: v.working.filter((w) => w.run !== run) });
      },
      failed: (run, why) => {
        const v = view.value;
        if (v) show({ ...v, working: v.working.map((w) => (w.run === run ? { ...w, status: "failed" as const, error: why } : w)) });
      },
      end: () => {
        stream.current = null;
        if (stillWorking(view.value)) asked();
      },
    });
  };

  useEffect(() => {
    if (uuid.current) {
      getConversation(uuid.current)
        .then((v) => {
          show(v);
          if (stillWorking(v)) follow();
        })
        .catch((e: Error) => (error.value = e.message));
    } else if (!Object.keys(chatTeam.value).length) {
      // A new conversation opened before the list answered: the agents to mention come from here.
      chat<Envelope & { team: Team }>("list")
        .then((r) => { if (!gone.current) chatTeam.value = r.team; })
        .catch((e: Error) => (error.value = e.message));
    }
    const dialog = root.current?.closest("dialog");
    const onScroll = () => { if (dialog) stick.current = dialog.scrollHeight - dialog.scrollTop - dialog.clientHeight < STICK_PX; };
    dialog?.addEventListener("scroll", onScroll);
    return () => {
      gone.current = true;
      dialog?.removeEventListener("scroll", onScroll);
      stream.current?.close();
      if (poll.current) clearTimeout(poll.current);
    };
  }, []);
  // What arrives is shown: the log follows it unless the user scrolled back to read.
  useEffect(() => {
    const dialog = root.current?.closest("dialog");
    if (dialog && stick.current) dialog.scrollTop = dialog.scrollHeight;
  });

  const send = async (text: string): Promise<boolean> => {
    sending.value = true;
    error.value = "";
    try {
      const v = await chat<Envelope & ConversationView>("post", uuid.current ? { uuid: uuid.current, text } : { text });
      if (!uuid.current) {
        uuid.current = v.uuid;
        onCreated(v.uuid);
      }
      stick.current = true;
      show(v);
      follow();
      return true;
    } catch (e) {
      error.value = (e as Error).message;
      return false;
    } finally {
      sending.value = false;
    }
  };
  const remove = async () => {
    const v = view.value;
    if (!v || !confirm(t("Delete the conversation “{title}”?", { title: v.title || t("Untitled") }))) return;
    try {
      await chat("delete", { uuid: v.uuid });
      void refreshUnread();
      onBack();
    } catch (e) {
      error.value = (e as Error).message;
    }
  };

  const v = view.value;
  const team = v?.team ?? chatTeam.value;
  return (
    <div class="chat-conversation" ref={root}>
      <div class="chat-head">
        <button type="button" class="link" onClick={onBack}>{t("← Conversations")}</button>
        <h3>{v?.title || t("New conversation")}</h3>
        {v && <button type="button" class="link danger" onClick={() => void remove()}>{t("Delete")}</button>}
      </div>
      {uuid.current && !v && !error.value && <p role="status">{t("Loading…")}</p>}
      {!uuid.current && <p class="muted">{t("Ask an agent to find, change or explain records for you. It works with your rights and names each change it makes.")}</p>}
      <div role="log" aria-label={t("Messages")} class="chat-log">
        <ol>
          {v?.messages.map((m) => <ChatMessage key={m.id} m={m} team={team} />)}
          {v?.working.map((w) => <ChatRun key={w.run} w={w} streamed={streams.value[w.run]} />)}
        </ol>
      </div>
      {error.value && <p class="error" role="alert">{error.value}</p>}
      <ChatComposer team={team} busy={sending.value} onSend={send} />
    </div>
  );
}

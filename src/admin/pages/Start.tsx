/**
 * The start page, the dashboard: the resources the user may work in; for administrators the system
 * messages; for those who may (view-git) the site folder's git state with its Pull button.
 */
import { useEffect } from "preact/hooks";
import { useSignal } from "@preact/signals";
import { api } from "../api";
import { may, me, resources } from "../state";
import { GitCard } from "../components/GitCard";
import { t } from "../i18n";

type Message = { level: string; topic: string; text: string; at: number };

export function Start() {
  const messages = useSignal<Message[]>([]);
  useEffect(() => {
    if (me.value?.admin) void api<{ messages: Message[] } & import("../api").Envelope>("GET", "/.system-messages").then((r) => (messages.value = r.body.messages)).catch(() => undefined);
  }, []);
  const list = Object.values(resources.value);
  return (
    <main class="page">
      <h1>{t("Welcome")}</h1>
      {messages.value.length > 0 && (
        <section aria-label={t("System messages")} class="messages">
          {messages.value.map((m, i) => <p key={i} class={`message ${m.level}`}><strong>{m.topic}</strong>: {m.text}</p>)}
        </section>
      )}
      {may("view-git") && <GitCard />}
      <ul class="cards">
        {list.map((r) => <li key={r.name}><a href={`/admin/${r.name}`}>{r.label.plural}</a></li>)}
      </ul>
    </main>
  );
}

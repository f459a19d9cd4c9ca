/**
 * One message of a conversation: the user's, or an agent's reply with what its run did (one line per
 * tool call) and a link to the record it touched last.
 */
import type { Message, Team } from "../chat";
import { t, when } from "../i18n";

/** "/admin/notes/n1" → "notes/n1". */
const recordOf = (link: string) => link.replace(/^\/admin\//, "");

export function ChatMessage({ m, team }: { m: Message; team: Team }) {
  const mine = m.from === "user";
  return (
    <li class={`chat-msg ${mine ? "mine" : "agent"}`} data-message={m.id} data-from={m.from}>
      <p class="chat-from">
        <strong>{mine ? t("You") : team[m.from] ?? m.from}</strong> <time class="muted" dateTime={new Date(m.at).toISOString()}>{when(m.at)}</time>
      </p>
      {m.steps && m.steps.length > 0 && (
        <ul class="chat-steps" aria-label={t("What the agent did")}>
          {m.steps.map((s, i) => <li key={i}>{s}</li>)}
        </ul>
      )}
      <p class="chat-text">{m.text}</p>
      {m.link && <p class="chat-link"><a href={m.link}>{t("Open {record}", { record: recordOf(m.link) })}</a></p>}
    </li>
  );
}

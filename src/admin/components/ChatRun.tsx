/**
 * An agent's run that has not replied yet: its reply as it streams in, each tool call as a line (a
 * link to the record it touched, when the stream names one), or why it failed.
 */
import type { LiveStep, Working } from "../chat";
import { t } from "../i18n";

/** What the stream told of a run so far. */
export type Streamed = { text: string; steps: LiveStep[] };

function StepLine({ s }: { s: LiveStep }) {
  const linked = s.ok !== false && s.resource && s.uuid && s.tool !== "delete_record";
  return <li>{linked ? <a href={`/admin/${encodeURIComponent(s.resource!)}/${encodeURIComponent(s.uuid!)}`}>{s.summary}</a> : s.summary}</li>;
}

/**
 * The run's latest steps as the server last said (summaries only), each linked where the stream
 * told the same step with its record, then the steps the stream told since.
 */
function stepsOf(w: Working, live: LiveStep[]): LiveStep[] {
  const lines = w.steps.map((summary) => live.findLast((s) => s.summary === summary) ?? { tool: "", summary });
  const last = w.steps.at(-1);
  const since = last === undefined ? 0 : live.findLastIndex((s) => s.summary === last) + 1;
  return [...lines, ...live.slice(since)];
}

export function ChatRun({ w, streamed }: { w: Working; streamed?: Streamed }) {
  if (w.status === "failed") {
    return (
      <li class="chat-msg agent failed" data-run={w.run}>
        <p class="chat-from"><strong>{w.name}</strong></p>
        <p class="error">{t("No reply: {error}", { error: w.error ?? t("the run failed") })}</p>
      </li>
    );
  }
  const steps = stepsOf(w, streamed?.steps ?? []);
  return (
    <li class="chat-msg agent working" data-run={w.run} aria-busy="true">
      <p class="chat-from"><strong>{w.name}</strong> <span class="muted">{t("is working…")}</span></p>
      {steps.length > 0 && <ul class="chat-steps" aria-label={t("What the agent did")}>{steps.map((s, i) => <StepLine key={i} s={s} />)}</ul>}
      {streamed?.text && <p class="chat-text">{streamed.text}</p>}
    </li>
  );
}

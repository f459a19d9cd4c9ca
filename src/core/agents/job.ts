/**
 * The built-in job type `agent-run`: one agent answering in one conversation, run by the durable
 * queue (retried with backoff; dead-lettered visibly when every attempt failed). The run works with
 * the rights its asker has now, read again when it starts; each tool step is stored as it happens,
 * so an attempt after a restart knows what the cut-off one did. Followers in this process see the
 * text stream and the steps live (core/agents/live.ts).
 */
import { hasPermission } from "../access/permissions";
import { findUser, principalForUser } from "../access/users";
import { AppError } from "../errors";
import type { JobHandler } from "../jobs/worker";
import type { Site } from "../site";
import { AGENT_RUN_JOB, timedOut } from "./chat";
import { addMessage, changeConversation, getConversation, runOf, type Conversation, type Run } from "./conversations";
import { stopped, tell } from "./live";
import { askRemote } from "./remote";
import { chatPermission, roster } from "./roster";
import { runAgent, type ChatMessage, type Step } from "./run";
import { mayAct } from "./tools";

export { AGENT_RUN_JOB };

/** Messages of the conversation the model reads (the latest). */
const CONTEXT_MESSAGES = 60;

/** The conversation up to the run's question, as the model reads it. */
function context(c: Conversation, r: Run): ChatMessage[] {
  return c.messages
    .filter((m) => m.at <= r.started && m.run !== r.id)
    .slice(-CONTEXT_MESSAGES)
    .map((m) => ({ role: m.from === "user" ? "user" : "assistant", content: m.text }));
}

/** The admin page of the last record a run touched, for the reply's link. */
function linkOf(steps: Step[]): string | undefined {
  const s = steps.findLast((x) => x.ok && x.resource && x.uuid && x.tool !== "list_records");
  return s ? `/admin/${s.resource}/${s.uuid}` : undefined;
}

export function agentRunHandler(site: Site): JobHandler {
  const settle = async (c: Conversation, r: Run, fn: (r: Run, c: Conversation) => void) => {
    await changeConversation(site, c.uuid, (x) => {
      const run = runOf(x, r.id);
      if (run) {
        fn(run, x);
        run.updated = Date.now();
      }
    });
  };
  const fail = async (c: Conversation, r: Run, error: string) => {
    await settle(c, r, (run) => {
      run.status = "failed";
      run.error = error;
    });
    tell(site, c.uuid, { type: "failed", run: r.id, agent: r.agent, error });
  };

  return async (job) => {
    const { conversation, run } = JSON.parse(job.payload) as { conversation: string; run: string };
    const c = await getConversation(site, conversation);
    const r = c && runOf(c, run);
    // Deleted meanwhile, or settled by an earlier attempt: nothing to do.
    if (!c || !r || r.status === "done" || r.status === "failed") return;
    if (timedOut(site, r)) return fail(c, r, `no answer within ${site.config.agentRunTimeout} s`);
    const agent = roster(site).get(r.agent);
    const user = await findUser(site, c.owner);
    if (!agent) return fail(c, r, `the agent ${r.agent} no longer exists on this site`);
    if (!user) return fail(c, r, "the user who asked no longer exists");
    const asker = { ...(await principalForUser(site, user)), agent: agent.id };
    if (!hasPermission(asker, chatPermission(agent.id))) return fail(c, r, `the user who asked no longer holds chat-${agent.id}`);

    const interrupted = r.steps;
    await settle(c, r, (x) => {
      x.status = "working";
      x.attempts = job.attempt;
    });
    tell(site, c.uuid, { type: "working", run: r.id, agent: r.agent });
    const events = {
      text: (delta: string) => tell(site, c.uuid, { type: "text", run: r.id, agent: r.agent, delta }),
      step: async (step: Step) => {
        await settle(c, r, (x) => void x.steps.push(step));
        tell(site, c.uuid, { type: "step", run: r.id, agent: r.agent, step });
      },
    };
    try {
      const result = agent.home
        ? await askRemote(site, agent, c, r, asker, events)
        : await runAgent(site, agent, asker, context(c, r), {
          maxSteps: site.config.agentSteps, toolAnswerChars: site.config.agentToolAnswer,
          readOnly: r.mayAct === false || !mayAct(asker), interrupted,
        }, events);
      const all = [...interrupted, ...result.steps];
      let reply: ReturnType<typeof addMessage> | undefined;
      await settle(c, r, (x, conv) => {
        x.status = "done";
        const link = linkOf(all);
        reply = addMessage(conv, { from: agent.id, text: result.text || "(no answer)", run: r.id, steps: all.map((s) => s.summary), ...(link ? { link } : {}) });
        conv.agent = agent.id;
      });
      if (reply) tell(site, c.uuid, { type: "done", run: r.id, agent: r.agent, message: reply });
    } catch (e) {
      const message = e instanceof AppError ? (e.details ?? e.code) : e instanceof Error ? e.message : String(e);
      // A refusal will not change by retrying; a provider or network failure may, until the last attempt.
      const final = (e instanceof AppError && e.status < 500) || job.attempt >= job.maxAttempts || timedOut(site, r);
      if (final) {
        await fail(c, r, message);
        if (!(e instanceof AppError && e.status < 500)) throw e;
        return;
      }
      await settle(c, r, (x) => {
        x.status = "queued";
        x.error = `attempt ${job.attempt} failed (${message}); trying again`;
      });
      throw e;
    } finally {
      stopped(site, c.uuid, r.id);
    }
  };
}

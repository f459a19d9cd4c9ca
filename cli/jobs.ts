import type { Command } from "commander";
import { notFound, conflict, badRequest } from "../src/core/errors";
import type { JobRow, JobState } from "../src/core/store/types";
import { action, withSite } from "./common";

type Opts = { dir?: string; json?: boolean };
const STATES: JobState[] = ["queued", "running", "done", "dead"];

const when = (ms: number | null) => (ms ? new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z") : "-");
/** What `resd jobs list --json` prints per job: the row with the payload parsed. */
const view = (j: JobRow) => ({ ...j, payload: JSON.parse(j.payload) as unknown });
const line = (j: JobRow) =>
  [j.id, j.state, j.type, `${j.resource}/${j.uuid}`, j.action, `attempts=${j.attempts}`,
    j.state === "queued" ? `run_at=${when(j.run_at)}` : j.state === "running" ? `lease_until=${when(j.lease_until)}` : `updated=${when(j.updated)}`,
    j.last_error ? `error=${j.last_error.replace(/\s+/g, " ").slice(0, 200)}` : ""].join("\t").trimEnd();

export function registerJobs(program: Command) {
  const jobs = program.command("jobs").description("the durable job queue");
  jobs.command("list")
    .description("list jobs, newest first")
    .option("--state <state>", `only jobs in this state (${STATES.join(", ")})`)
    .option("--limit <n>", "at most this many jobs", "100")
    .option("--dir <dir>", "site directory")
    .option("--json", "print JSON")
    .action(action(async (o: Opts & { state?: string; limit: string }) => {
      if (o.state !== undefined && !STATES.includes(o.state as JobState)) throw badRequest(`--state must be one of ${STATES.join(", ")}`);
      if (!/^\d+$/.test(o.limit) || Number(o.limit) < 1) throw badRequest("--limit must be a positive integer");
      const rows = await withSite(o, (site) => site.store.jobs.list({ state: o.state as JobState | undefined, limit: Number(o.limit) }));
      console.log(o.json ? JSON.stringify({ ok: true, jobs: rows.map(view) }) : rows.map(line).join("\n") || "no jobs");
    }));
  jobs.command("retry <id>")
    .description("queue a dead (or any not running) job again, with a fresh attempt count")
    .option("--dir <dir>", "site directory")
    .option("--json", "print JSON")
    .action(action(async (id: string, o: Opts) => {
      if (!/^\d+$/.test(id)) throw badRequest("ID must be a job number (see `resd jobs list`)");
      const row = await withSite(o, async (site) => {
        const job = await site.store.jobs.get(Number(id));
        if (!job) throw notFound(`job ${id} does not exist`);
        const again = await site.store.jobs.retry(job.id, Date.now());
        if (!again) throw conflict(`job ${id} is running; it can be retried once it failed or finished`);
        return again;
      });
      console.log(o.json ? JSON.stringify({ ok: true, job: view(row) }) : `job ${row.id} (${row.type}) queued again`);
    }));
}

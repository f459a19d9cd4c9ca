/**
 * Mail through SMTP (RESD_SMTP_URL, nodemailer). A mail is a job of the durable queue (type `mail`,
 * built in), queued in the transaction that made it necessary: it is sent if and only if that write
 * committed, retried with the queue's backoff, and left as a dead job when every attempt failed.
 */
import nodemailer, { type Transporter } from "nodemailer";
import { AppError } from "../errors";
import type { JobHandler } from "../jobs/worker";
import { wakeWorkers } from "../jobs/enqueue";
import type { Site } from "../site";
import type { StoreTx } from "../store/types";

export const MAIL_JOB = "mail";
const SEND_TIMEOUT_MS = 30_000;

export type Mail = { to: string; subject: string; text: string; html: string };

export const mailConfigured = (site: Site) => site.config.smtpUrl !== "";

/** 503 where a flow needs a mail and the site has no SMTP server (documented in docs/accounts.md). */
export function requireMail(site: Site, what: string): void {
  if (!mailConfigured(site)) {
    throw new AppError(503, "SERVICE_UNAVAILABLE", `${what} needs mail, and this site has none: set RESD_SMTP_URL (and RESD_MAIL_FROM, RESD_PUBLIC_URL); meanwhile an administrator can use \`resd user reset-link\` or \`resd user invite\``);
  }
}

/** The site's public base URL, which every link in a mail starts with; never taken from a request's Host. */
export function publicBase(site: Site): string {
  const cors = site.config.corsOrigins.split(",")[0]?.trim() ?? "";
  const base = site.config.publicUrl || (/^https?:\/\//.test(cors) ? cors : "");
  if (!base) throw new AppError(503, "SERVICE_UNAVAILABLE", "links in mails need RESD_PUBLIC_URL (the site's public address)");
  return base.replace(/\/+$/, "");
}

export const siteName = (site: Site) => site.config.siteName || (site.config.publicUrl ? new URL(site.config.publicUrl).host : "resd");

function fromOf(site: Site): string {
  if (site.config.mailFrom) return site.config.mailFrom;
  const host = site.config.publicUrl ? new URL(site.config.publicUrl).hostname : "localhost";
  return `${siteName(site).replace(/["\\\r\n]/g, "")} <noreply@${host}>`;
}

const transports = new Map<string, Transporter>();
function transportFor(url: string): Transporter {
  let t = transports.get(url);
  if (!t) {
    t = nodemailer.createTransport({ url, connectionTimeout: SEND_TIMEOUT_MS, greetingTimeout: SEND_TIMEOUT_MS, socketTimeout: SEND_TIMEOUT_MS } as Parameters<typeof nodemailer.createTransport>[0]);
    transports.set(url, t);
  }
  return t;
}

/** Queues a mail inside `tx`: it exists if and only if the transaction commits. */
export async function queueMail(site: Site, tx: StoreTx, mail: Mail): Promise<void> {
  await tx.enqueueJob({ type: MAIL_JOB, resource: "users", action: "create", uuid: "", payload: JSON.stringify(mail), run_at: Date.now() });
  tx.afterCommit(() => wakeWorkers(site));
}

export function mailHandler(site: Site): JobHandler {
  return async (job) => {
    requireMail(site, "sending a mail");
    const mail = JSON.parse(job.payload) as Mail;
    await transportFor(site.config.smtpUrl).sendMail({ from: fromOf(site), to: mail.to, subject: mail.subject, text: mail.text, html: mail.html });
  };
}

/** Asks the SMTP server once at start, so a wrong setting shows in the log at once (the queue retries later anyway). */
export async function checkMail(site: Site): Promise<string | null> {
  if (!mailConfigured(site)) return null;
  try {
    await Promise.race([transportFor(site.config.smtpUrl).verify(), Bun.sleep(5000).then(() => Promise.reject(new Error("no answer within 5 s")))]);
    return null;
  } catch (e) {
    return `the SMTP server of RESD_SMTP_URL does not answer as it should (${(e as Error).message}); mails wait in the job queue and are retried`;
  }
}

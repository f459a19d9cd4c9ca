/**
 * A real SMTP server on 127.0.0.1 for tests (`smtp-server` from npm): it accepts every mail and
 * keeps it, decoded enough to read: recipients, subject, the text part and its links.
 */
import { SMTPServer } from "smtp-server";
import type { AddressInfo } from "node:net";

export type ReceivedMail = { from: string; to: string[]; subject: string; text: string; html: string; raw: string; headers: string };
export type MailBox = {
  url: string;
  mails: ReceivedMail[];
  /** Resolves with the first mail (seen or to come) that `match` accepts; rejects after `ms`. */
  next(match: (m: ReceivedMail) => boolean, ms?: number): Promise<ReceivedMail>;
  /** The first link in a mail's text that contains `part`. */
  link(m: ReceivedMail, part: string): string;
  stop(): Promise<void>;
};

function decode(body: string, encoding: string): string {
  if (/base64/i.test(encoding)) return Buffer.from(body.replace(/\s+/g, ""), "base64").toString("utf8");
  if (/quoted-printable/i.test(encoding)) {
    const bytes = body.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/gi, (_, h: string) => String.fromCharCode(Number.parseInt(h, 16)));
    return Buffer.from(bytes, "latin1").toString("utf8");
  }
  return body;
}

const headerOf = (headers: string, name: string) => new RegExp(`^${name}:\\s*((?:.*)(?:\\r?\\n[ \\t].*)*)`, "im").exec(headers)?.[1]?.replace(/\r?\n[ \t]/g, " ").trim() ?? "";

/** Words of a header as RFC 2047 encodes them (=?UTF-8?Q?…?= / =?UTF-8?B?…?=), decoded. */
const words = (s: string) => s.replace(/=\?utf-8\?([qb])\?([^?]*)\?=\s*/gi, (_, kind: string, text: string) =>
  kind.toLowerCase() === "b" ? Buffer.from(text, "base64").toString("utf8") : decode(text.replace(/_/g, " "), "quoted-printable"));

/** The parts of a MIME message: [content-type, decoded body]. */
function parts(raw: string): { type: string; body: string }[] {
  const split = raw.search(/\r?\n\r?\n/);
  const headers = raw.slice(0, split);
  const body = raw.slice(split).replace(/^\r?\n\r?\n/, "");
  const type = headerOf(headers, "content-type");
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
  if (!boundary) return [{ type, body: decode(body, headerOf(headers, "content-transfer-encoding")) }];
  return body.split(`--${boundary}`).slice(1).filter((p) => !p.startsWith("--")).flatMap((p) => parts(p.replace(/^\r?\n/, "")));
}

/** `port`: listen there (0: any free port); `refuse`: recipients answered 550 (the mail is not taken). */
export async function mailBox(opts: { port?: number; refuse?: (to: string) => boolean } = {}): Promise<MailBox> {
  const mails: ReceivedMail[] = [];
  const waiters = new Set<() => void>();
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onRcptTo(address, _session, callback) {
      if (opts.refuse?.(address.address)) return callback(Object.assign(new Error("mailbox unavailable"), { responseCode: 550 }));
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        const raw = Buffer.concat(chunks).toString("utf8");
        const headers = raw.slice(0, raw.search(/\r?\n\r?\n/));
        const all = parts(raw);
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((r) => r.address),
          subject: words(headerOf(headers, "subject")),
          text: all.find((p) => /text\/plain/i.test(p.type))?.body ?? "",
          html: all.find((p) => /text\/html/i.test(p.type))?.body ?? "",
          raw,
          headers,
        });
        for (const w of [...waiters]) w();
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, "127.0.0.1", resolve));
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    next(match, ms = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = mails.find(match);
          if (!m) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(m);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no matching mail within ${ms} ms; got: ${mails.map((m) => `${m.to.join(",")}: ${m.subject}`).join(" | ")}`));
        }, ms);
        waiters.add(check);
        check();
      });
    },
    link(m, part) {
      const found = m.text.match(/https?:\/\/\S+/g)?.find((u) => u.includes(part));
      if (!found) throw new Error(`no link with ${part} in: ${m.text}`);
      return found;
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

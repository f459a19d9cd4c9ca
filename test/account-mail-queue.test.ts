/**
 * Mails go through the durable job queue: one queued while the SMTP server is down is delivered
 * once it is back; one the SMTP server refuses ends as a dead job, visible in `resd jobs`.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { adminSite, cli } from "./helpers/site";
import { addUser, call } from "./helpers/access";
import { mailBox, type MailBox } from "./helpers/smtp";
import { freePort } from "./helpers/ports";


let port = 0;
let box: MailBox | null = null;
let s: Awaited<ReturnType<typeof adminSite>>;
beforeAll(async () => {
  port = await freePort();
  s = await adminSite({ env: { RESD_SMTP_URL: `smtp://127.0.0.1:${port}`, RESD_PUBLIC_URL: "https://cms.example.org", RESD_JOB_POLL: "50", RESD_JOB_BACKOFF: "200", RESD_JOB_ATTEMPTS: "4" } });
  await addUser(s.dir, "late@example.com", "late-password-1");
  await addUser(s.dir, "refused@example.com", "refused-password-1");
});
afterAll(async () => {
  await s.cleanup();
  await box?.stop();
});

test("a mail queued while the SMTP server is down arrives once it is back; one it refuses ends dead, visibly", async () => {
  expect((await call(s.base, "POST", "/api/v1/session/password-reset", { body: { email: "late@example.com" } })).status).toBe(200);
  await Bun.sleep(300);
  box = await mailBox({ port, refuse: (to) => to.startsWith("refused") });
  const late = await box.next((m) => m.to.includes("late@example.com"), 15_000);
  expect(late.subject).toStartWith("Reset your password");
  expect((await call(s.base, "POST", "/api/v1/session/password-reset", { body: { email: "refused@example.com" } })).status).toBe(200);
  let dead = "";
  const deadline = Date.now() + 20_000;
  while (!dead.includes('"mail"') && Date.now() < deadline) {
    await Bun.sleep(300);
    dead = (await cli(s.dir, ["jobs", "list", "--state", "dead", "--json"])).stdout;
  }
  expect(dead).toContain('"mail"');
  expect(dead).toContain("550");
  expect(box.mails.some((m) => m.to.includes("refused@example.com"))).toBe(false);
});

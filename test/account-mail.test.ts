/**
 * The account flows that need mail — password reset, e-mail change, invitations — black-box with
 * the real server and a real SMTP server on 127.0.0.1, and the attacks on them: token reuse,
 * expiry, another user's token, a password changed another way, racing confirms, enumeration by
 * answer or time, header injection, a reset flood.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { adminSite, cli, makeSite, serve } from "./helpers/site";
import { addUser, call, tokenFor } from "./helpers/access";
import { mailBox, type MailBox } from "./helpers/smtp";

let box: MailBox;
let s: Awaited<ReturnType<typeof adminSite>>;
const PUBLIC = "https://cms.example.org";
const reset = (email: unknown) => call(s.base, "POST", "/api/v1/session/password-reset", { body: { email } });
const confirm = (token: string, password: string) => call(s.base, "POST", "/api/v1/session/password-reset/confirm", { body: { token, password } });
const tokenIn = (link: string) => new URL(link).searchParams.get("token")!;
const signIn = (email: string, password: string) => call(s.base, "POST", "/api/v1/session", { body: { email, password } });
const cookieOf = (r: { headers: Headers }) => (r.headers.get("set-cookie") ?? "").split(";")[0];
const mailsTo = (to: string) => box.mails.filter((m) => m.to.includes(to));

beforeAll(async () => {
  box = await mailBox();
  s = await adminSite({ env: { RESD_SMTP_URL: box.url, RESD_MAIL_FROM: "Example CMS <cms@example.org>", RESD_PUBLIC_URL: PUBLIC, RESD_SITE_NAME: "Example CMS", RESD_JOB_POLL: "50" } });
  for (const name of ["ann", "bob", "cat", "dan", "eve", "fay"]) await addUser(s.dir, `${name}@example.com`, `${name}-password-1`, { api: true });
});
afterAll(async () => {
  await s.cleanup();
  await box.stop();
});

describe("password reset", () => {
  test("the mail's link sets a new password once; sessions and tokens end; the lockout is cleared", async () => {
    const session = cookieOf(await signIn("ann@example.com", "ann-password-1"));
    const token = await tokenFor(s.base, "ann@example.com", "ann-password-1");
    for (let i = 0; i < 6; i++) await signIn("ann@example.com", "wrong-guess");
    expect((await signIn("ann@example.com", "ann-password-1")).status).toBe(429);
    const asked = await reset("Ann@Example.com");
    expect(asked.status).toBe(200);
    expect(asked.body!.ok).toBe(true);
    const mail = await box.next((m) => m.to.includes("ann@example.com"));
    expect(mail.subject).toBe("Reset your password (Example CMS)");
    expect(mail.headers).toMatch(/^From: "?Example CMS"? <cms@example\.org>/m);
    const link = box.link(mail, "/admin/reset-password");
    expect(link.startsWith(`${PUBLIC}/admin/reset-password?token=`)).toBe(true);
    expect(mail.html).toContain("Choose a new password");
    const short = await confirm(tokenIn(link), "x");
    expect(short.status).toBe(422);
    expect(short.body!.errors.password).toBeDefined();
    const done = await confirm(tokenIn(link), "ann-new-password-2");
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ ok: true, email: "ann@example.com" });
    expect((await call(s.base, "GET", "/api/v1/session", { headers: { cookie: session } })).status).toBe(401);
    expect((await call(s.base, "GET", "/api/v1/.resources", { token })).status).toBe(401);
    expect((await signIn("ann@example.com", "ann-new-password-2")).status).toBe(200);
    expect((await signIn("ann@example.com", "ann-password-1")).status).toBe(401);
    // Used once: the same link again is refused.
    const again = await confirm(tokenIn(link), "ann-third-password-3");
    expect(again.status).toBe(400);
    expect(again.body!.errors.token).toBeDefined();
    // A notice of the change went to the account.
    await box.next((m) => m.to.includes("ann@example.com") && m.subject.startsWith("Your password was changed"));
  });

  test("no account enumeration: an unknown address gets the same answer, in the same time, and no mail", async () => {
    const known = await reset("bob@example.com");
    const unknown = await reset("nobody@example.com");
    const strip = (b: Record<string, any>) => { const { execution_time: _e, memory_usage: _m, request_id: _r, ...rest } = b; return rest; };
    expect(unknown.status).toBe(known.status);
    expect(strip(unknown.body!)).toEqual(strip(known.body!));
    const time = async (email: string) => { const t = performance.now(); await reset(email); return performance.now() - t; };
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < 2; i++) { a.push(await time("bob@example.com")); b.push(await time(`nobody${i}@example.com`)); }
    const median = (x: number[]) => x.sort((p, q) => p - q)[Math.floor(x.length / 2)];
    expect(Math.abs(median(a) - median(b))).toBeLessThan(100);
    await Bun.sleep(500);
    expect(box.mails.some((m) => m.to.some((t) => t.startsWith("nobody")))).toBe(false);
  });

  test("a reset flood against one address: 3 an hour, then 429 (and no more mails)", async () => {
    const before = mailsTo("cat@example.com").length;
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push((await reset("cat@example.com")).status);
    expect(answers).toEqual([200, 200, 200, 429, 429]);
    await Bun.sleep(500);
    expect(mailsTo("cat@example.com").length - before).toBe(3);
    // Only the latest link works: each new one replaces the one before.
    const links = mailsTo("cat@example.com").slice(before).map((m) => tokenIn(box.link(m, "reset-password")));
    expect((await confirm(links[0], "cat-new-password-2")).status).toBe(400);
    expect((await confirm(links[2], "cat-new-password-2")).status).toBe(200);
  });

  test("another user's token, a forged one, and a token after the password was changed another way are refused", async () => {
    await reset("dan@example.com");
    const danLink = box.link(await box.next((m) => m.to.includes("dan@example.com")), "reset-password");
    const [danUuid, secret] = tokenIn(danLink).split(".");
    const eveUuid = (await s.apiJson("GET", "/api/v1/users?filter=email:eve@example.com")).body!.users;
    const eve = Object.keys(eveUuid)[0];
    expect((await confirm(`${eve}.${secret}`, "taken-over-password")).status).toBe(400);
    expect((await confirm(`${danUuid}.${"A".repeat(43)}`, "taken-over-password")).status).toBe(400);
    for (const bad of ["", "nonsense", `${danUuid}.`, 42, null]) expect((await call(s.base, "POST", "/api/v1/session/password-reset/confirm", { body: { token: bad, password: "whatever-password" } })).status).toBe(400);
    // The admin sets dan's password: the link dies with the old password.
    expect((await s.apiJson("PUT", `/api/v1/users/${danUuid}`, { password: "set-by-admin-1" })).status).toBe(200);
    expect((await confirm(tokenIn(danLink), "dan-own-password-2")).status).toBe(400);
    expect((await signIn("dan@example.com", "set-by-admin-1")).status).toBe(200);
  });

  test("two confirms racing with one token: exactly one wins", async () => {
    await reset("eve@example.com");
    const link = box.link(await box.next((m) => m.to.includes("eve@example.com")), "reset-password");
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => confirm(tokenIn(link), `eve-racing-password-${i}`)));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 400)).toHaveLength(5);
    const winner = answers.findIndex((a) => a.status === 200);
    expect((await signIn("eve@example.com", `eve-racing-password-${winner}`)).status).toBe(200);
  });

  test("header injection through the address is no way to add recipients", async () => {
    const before = box.mails.length;
    const r = await reset("fay@example.com\r\nBcc: attacker@evil.example");
    expect([200, 422]).toContain(r.status);
    await Bun.sleep(500);
    expect(box.mails.slice(before).some((m) => m.to.some((t) => t.includes("evil")) || /evil/.test(m.headers))).toBe(false);
  });
});

describe("e-mail change", () => {
  test("asked with the password; confirmed at the new address, noticed at the old; then the new address signs in", async () => {
    const session = cookieOf(await signIn("bob@example.com", "bob-password-1"));
    const origin = { cookie: session, origin: s.base };
    const wrong = await call(s.base, "POST", "/api/v1/session/email-change", { body: { email: "robert@example.com", password: "nope" }, headers: origin });
    expect(wrong.status).toBe(401);
    const asked = await call(s.base, "POST", "/api/v1/session/email-change", { body: { email: "Robert@Example.com", password: "bob-password-1" }, headers: origin });
    expect(asked.status).toBe(200);
    expect(asked.body).toMatchObject({ ok: true, pending: "robert@example.com" });
    const confirmMail = await box.next((m) => m.to.includes("robert@example.com"));
    await box.next((m) => m.to.includes("bob@example.com") && m.subject.startsWith("Your e-mail address is about to change"));
    // Nothing changes before the confirmation.
    expect((await signIn("bob@example.com", "bob-password-1")).status).toBe(200);
    const link = box.link(confirmMail, "/admin/confirm-email");
    const done = await call(s.base, "POST", "/api/v1/session/email-change/confirm", { body: { token: tokenIn(link) } });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ ok: true, email: "robert@example.com" });
    expect((await signIn("robert@example.com", "bob-password-1")).status).toBe(200);
    expect((await signIn("bob@example.com", "bob-password-1")).status).toBe(403);
    expect((await call(s.base, "POST", "/api/v1/session/email-change/confirm", { body: { token: tokenIn(link) } })).status).toBe(400);
  });

  test("the address must stay unique (case-insensitive): taken before the confirmation, the change is refused with 409", async () => {
    const token = await tokenFor(s.base, "robert@example.com", "bob-password-1");
    const asked = await call(s.base, "POST", "/api/v1/session/email-change", { token, body: { email: "shared@example.com", password: "bob-password-1" } });
    expect(asked.status).toBe(200);
    const link = box.link(await box.next((m) => m.to.includes("shared@example.com")), "confirm-email");
    await addUser(s.dir, "SHARED@example.com", "shared-password-1");
    const r = await call(s.base, "POST", "/api/v1/session/email-change/confirm", { body: { token: tokenIn(link) } });
    expect(r.status).toBe(409);
    expect((await signIn("robert@example.com", "bob-password-1")).status).toBe(200);
    // Asking for one's own address, or no password: 422; anonymous: 401.
    expect((await call(s.base, "POST", "/api/v1/session/email-change", { token, body: { email: "robert@example.com", password: "bob-password-1" } })).status).toBe(422);
    expect((await call(s.base, "POST", "/api/v1/session/email-change", { token, body: { email: "x@example.com" } })).status).toBe(422);
    expect((await call(s.base, "POST", "/api/v1/session/email-change", { body: { email: "x@example.com", password: "p" } })).status).toBe(401);
  });
});

describe("invitations", () => {
  test("an admin invites with a role; the invitee chooses a password through the link and signs in; resend makes a new link", async () => {
    const role = await s.apiJson("POST", "/api/v1/roles", { name: "writers", permissions: ["view-users"] });
    const roleId = Object.keys(role.body!.roles)[0];
    const r = await s.apiJson("POST", "/api/v1/session/invitations", { email: "New.Writer@Example.com", role: roleId, name: "New Writer" });
    expect(r.status).toBe(200);
    expect(r.body!.user).toMatchObject({ email: "new.writer@example.com", role: roleId, name: "New Writer" });
    const first = await box.next((m) => m.to.includes("new.writer@example.com"));
    expect(first.subject).toBe("You are invited (Example CMS)");
    expect(first.text).toContain("admin@example.com invited you");
    // Without a password nobody signs in as the invitee.
    expect((await signIn("new.writer@example.com", "")).status).toBe(400);
    const again = await s.apiJson("POST", "/api/v1/session/invitations", { email: "new.writer@example.com", resend: true });
    expect(again.status).toBe(200);
    const second = await box.next((m) => m.to.includes("new.writer@example.com") && m !== first);
    expect((await confirm(tokenIn(box.link(first, "reset-password")), "writer-password-1")).status).toBe(400);
    expect((await confirm(tokenIn(box.link(second, "reset-password")), "writer-password-1")).status).toBe(200);
    expect((await signIn("new.writer@example.com", "writer-password-1")).status).toBe(200);
    const resent = await s.apiJson("POST", "/api/v1/session/invitations", { email: "new.writer@example.com", resend: true });
    expect(resent.status).toBe(409);
    expect((await s.apiJson("POST", "/api/v1/session/invitations", { email: "new.writer@example.com" })).status).toBe(422);
  });

  test("header injection through names: the invitee's and the inviter's names add no recipient and no header", async () => {
    const me = (await s.apiJson("GET", "/api/v1/users?filter=email:admin@example.com")).body!.users;
    await s.apiJson("PATCH", `/api/v1/users/${Object.keys(me)[0]}`, { name: "Admin\r\nBcc: attacker@evil.example" });
    const before = box.mails.length;
    const r = await s.apiJson("POST", "/api/v1/session/invitations", { email: "named@example.com", name: "Named\r\nBcc: attacker@evil.example\r\n\r\nbody" });
    expect([200, 422]).toContain(r.status);
    if (r.status === 200) await box.next((m) => m.to.includes("named@example.com"));
    await Bun.sleep(300);
    const sent = box.mails.slice(before);
    expect(sent.every((m) => m.to.length === 1 && !m.to.some((t) => t.includes("evil")))).toBe(true);
    expect(sent.some((m) => /^bcc:/im.test(m.headers))).toBe(false);
  });

  test("a user manager invites only within their own rights; others may not invite at all", async () => {
    const managers = await s.apiJson("POST", "/api/v1/roles", { name: "managers", permissions: ["view-users", "create-users", "edit-users"] });
    const managerRole = Object.keys(managers.body!.roles)[0];
    await s.apiJson("POST", "/api/v1/users", { email: "manager@example.com", password: "manager-password-1", role: managerRole, api: true });
    const token = await tokenFor(s.base, "manager@example.com", "manager-password-1");
    const toAdmin = await call(s.base, "POST", "/api/v1/session/invitations", { token, body: { email: "sneaky@example.com", role: "admin" } });
    expect(toAdmin.status).toBe(403);
    expect((await s.apiJson("GET", "/api/v1/users?filter=email:sneaky@example.com")).body!.count).toBe(0);
    const ok = await call(s.base, "POST", "/api/v1/session/invitations", { token, body: { email: "peer@example.com", role: managerRole } });
    expect(ok.status).toBe(200);
    const plain = await tokenFor(s.base, "fay@example.com", "fay-password-1");
    expect((await call(s.base, "POST", "/api/v1/session/invitations", { token: plain, body: { email: "x@example.com" } })).status).toBe(403);
    expect((await call(s.base, "POST", "/api/v1/session/invitations", { body: { email: "x@example.com" } })).status).toBe(401);
  });
});

describe("one's own password", () => {
  test("with the current password: the page's session is made anew, every other session and token ends", async () => {
    await addUser(s.dir, "own@example.com", "own-password-1", { api: true });
    const first = cookieOf(await signIn("own@example.com", "own-password-1"));
    const other = cookieOf(await signIn("own@example.com", "own-password-1"));
    const token = await tokenFor(s.base, "own@example.com", "own-password-1");
    const change = (b: Record<string, unknown>, cookie = first) => call(s.base, "POST", "/api/v1/session/password", { body: b, headers: { cookie, origin: s.base } });
    expect((await change({ password: "wrong", new_password: "own-password-2" })).status).toBe(401);
    const weak = await change({ password: "own-password-1", new_password: "x" });
    expect(weak.status).toBe(422);
    expect(weak.body!.errors.new_password).toBeDefined();
    expect((await change({ password: "own-password-1" })).status).toBe(422);
    const done = await change({ password: "own-password-1", new_password: "own-password-2" });
    expect(done.status).toBe(200);
    const fresh = cookieOf(done);
    expect(fresh).not.toBe(first);
    expect((await call(s.base, "GET", "/api/v1/session", { headers: { cookie: fresh } })).status).toBe(200);
    for (const old of [first, other]) expect((await call(s.base, "GET", "/api/v1/session", { headers: { cookie: old } })).status).toBe(401);
    expect((await call(s.base, "GET", "/api/v1/.resources", { token })).status).toBe(401);
    // With a token: {ok: true}, and that token ends too.
    const t2 = await tokenFor(s.base, "own@example.com", "own-password-2");
    const viaToken = await call(s.base, "POST", "/api/v1/session/password", { token: t2, body: { password: "own-password-2", new_password: "own-password-3" } });
    expect(viaToken.status).toBe(200);
    expect(viaToken.body!.ok).toBe(true);
    expect((await call(s.base, "GET", "/api/v1/.resources", { token: t2 })).status).toBe(401);
    expect((await signIn("own@example.com", "own-password-3")).status).toBe(200);
    expect((await call(s.base, "POST", "/api/v1/session/password", { body: { password: "a", new_password: "b" } })).status).toBe(401);
  });
});

describe("without mail, and expiry", () => {
  test("the API answers 503 where a mail is needed; resd user reset-link and resd user invite print working links", async () => {
    const dir = makeSite();
    try {
      await addUser(dir, "gil@example.com", "gil-password-1");
      const server = await serve(dir, { env: { RESD_RESET_TTL: "2" } });
      try {
        const r = await call(server.base, "POST", "/api/v1/session/password-reset", { body: { email: "gil@example.com" } });
        expect(r.status).toBe(503);
        expect(r.body!.message).toBe("SERVICE_UNAVAILABLE");
        expect(r.body!.details).toContain("RESD_SMTP_URL");
        const unknown = await call(server.base, "POST", "/api/v1/session/password-reset", { body: { email: "nobody@example.com" } });
        expect(unknown.status).toBe(503);
        const link = await cli(dir, ["user", "reset-link", "gil@example.com", "--json"]);
        expect(link.code).toBe(0);
        const printed = JSON.parse(link.stdout) as { link: string };
        expect(printed.link).toStartWith("/admin/reset-password?token=");
        const token = new URLSearchParams(printed.link.split("?")[1]).get("token")!;
        // RESD_RESET_TTL=2 on the server: the link expires.
        const expiring = await cli(dir, ["user", "reset-link", "gil@example.com", "--json"], { env: { RESD_RESET_TTL: "1" } });
        const late = new URLSearchParams((JSON.parse(expiring.stdout) as { link: string }).link.split("?")[1]).get("token")!;
        await Bun.sleep(1500);
        expect((await call(server.base, "POST", "/api/v1/session/password-reset/confirm", { body: { token: late, password: "gil-late-password" } })).status).toBe(400);
        expect((await call(server.base, "POST", "/api/v1/session/password-reset/confirm", { body: { token, password: "gil-new-password" } })).status).toBe(400);
        const fresh = await cli(dir, ["user", "reset-link", "gil@example.com", "--json"]);
        const t2 = new URLSearchParams((JSON.parse(fresh.stdout) as { link: string }).link.split("?")[1]).get("token")!;
        expect((await call(server.base, "POST", "/api/v1/session/password-reset/confirm", { body: { token: t2, password: "gil-new-password" } })).status).toBe(200);
        const invited = await cli(dir, ["user", "invite", "hal@example.com", "--role", "admin", "--json"]);
        expect(invited.code).toBe(0);
        const inv = JSON.parse(invited.stdout) as { link: string; email: string };
        expect(inv.link).toContain("invite=1");
        const t3 = new URLSearchParams(inv.link.split("?")[1]).get("token")!;
        expect((await call(server.base, "POST", "/api/v1/session/password-reset/confirm", { body: { token: t3, password: "hal-password-1" } })).status).toBe(200);
        expect((await call(server.base, "POST", "/api/v1/session", { body: { email: "hal@example.com", password: "hal-password-1" } })).status).toBe(200);
      } finally {
        await server.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

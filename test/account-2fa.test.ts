/**
 * Two-factor sign-in (TOTP), black-box through the real server: enrolment, sign-in by session and
 * by token, the attacks the issue lists (wrong codes, a code used twice, brute force, a used
 * ticket or recovery code), roles that require it, and an administrator's reset.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import SwaggerParser from "@apidevtools/swagger-parser";
import * as OTPAuth from "otpauth";
import { adminSite, cli } from "./helpers/site";
import { call, tokenFor, type Reply } from "./helpers/access";

const notes = { fields: { title: { type: "text", required: true } } };

let s: Awaited<ReturnType<typeof adminSite>>;
const roles: Record<string, string> = {};
const uuids: Record<string, string> = {};

const email = (who: string) => `${who}@example.com`;
const password = (who: string) => `${who}-password`;

async function role(name: string, permissions: string[], extra: Record<string, unknown> = {}): Promise<void> {
  const r = await s.apiJson("POST", "/api/v1/roles", { name, permissions, ...extra });
  expect(r.status).toBe(201);
  roles[name] = Object.keys(r.body!.roles)[0];
}

async function user(who: string, roleName: string): Promise<void> {
  const r = await s.apiJson("POST", "/api/v1/users", { email: email(who), password: password(who), role: roles[roleName], api: true });
  expect(r.status).toBe(201);
  uuids[who] = Object.keys(r.body!.users)[0];
}

const cookieOf = (r: Reply) => /resd_session=([^;]*)/.exec(r.headers.get("set-cookie") ?? "")?.[1] ?? null;
const withCookie = (cookie: string) => ({ headers: { cookie: `resd_session=${cookie}` } });

/** Signs in by session (no second factor) and returns the cookie. */
async function session(who: string): Promise<string> {
  const r = await call(s.base, "POST", "/api/v1/session", { body: { email: email(who), password: password(who) } });
  expect(r.status).toBe(200);
  return cookieOf(r)!;
}

/**
 * Codes per user, each of a time step newer than the last one used (a code is usable once, and
 * no older one after it): the step before now, now, the one after — then it waits for time to pass.
 */
const secrets: Record<string, string> = {};
const lastStep: Record<string, number> = {};
const totp = (secret: string) => new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret), algorithm: "SHA1", digits: 6, period: 30 });
const stepNow = () => Math.floor(Date.now() / 30_000);
async function nextCode(who: string): Promise<string> {
  for (;;) {
    const now = stepNow();
    const step = Math.max((lastStep[who] ?? -Infinity) + 1, now - 1);
    // Not the step after now when it is about to become the current one's successor's neighbour.
    if (step <= now + 1 && !(step === now - 1 && Date.now() % 30_000 > 28_000)) {
      lastStep[who] = step;
      return totp(secrets[who]).generate({ timestamp: step * 30_000 });
    }
    await Bun.sleep(500);
  }
}
/** The code nextCode would give, without using its step up (for requests refused before the code is looked at). */
function peekCode(who: string): string {
  const step = Math.max((lastStep[who] ?? -Infinity) + 1, stepNow());
  return totp(secrets[who]).generate({ timestamp: step * 30_000 });
}
/** A wrong code: the right one for a step far away. */
const wrongCode = (who: string) => totp(secrets[who]).generate({ timestamp: (stepNow() + 40) * 30_000 });

/** Enrols and confirms `who` (signed in by session), keeping the secret; returns the recovery codes and the new cookie. */
async function enrolled(who: string): Promise<{ recovery: string[]; cookie: string }> {
  const cookie = await session(who);
  const e = await call(s.base, "POST", "/api/v1/session/2fa/enrol", { body: { password: password(who) }, ...withCookie(cookie) });
  expect(e.status).toBe(200);
  secrets[who] = e.body!.secret;
  delete lastStep[who];
  const c = await call(s.base, "POST", "/api/v1/session/2fa/confirm", { body: { code: await nextCode(who) }, ...withCookie(cookie) });
  expect(c.status).toBe(200);
  return { recovery: c.body!.recovery_codes, cookie: cookieOf(c)! };
}

beforeAll(async () => {
  s = await adminSite({ defs: { notes } });
  await s.apiJson("POST", "/api/v1/notes/n1", { title: "One" });
  await role("member", ["view-notes"]);
  await role("secure", ["view-notes"], { require_2fa: true });
  await role("manager", ["manage-users", "view-notes"]);
  await role("viewer", ["view-users", "view-notes"]);
  for (const who of ["alice", "bob", "brute", "rec", "plain", "reuse", "conc"]) await user(who, "member");
  await user("carol", "secure");
  await user("dave", "manager");
  await user("vera", "viewer");
});
afterAll(() => s.cleanup());

describe("enrolment", () => {
  test("enrol (password again) → secret and otpauth URL; confirm with a code → on, ten recovery codes; other sessions and tokens end", async () => {
    const cookie = await session("alice");
    const other = await session("alice");
    const token = await tokenFor(s.base, email("alice"), password("alice"));

    const wrongPassword = await call(s.base, "POST", "/api/v1/session/2fa/enrol", { body: { password: "nope-nope-nope" }, ...withCookie(cookie) });
    expect(wrongPassword.status).toBe(401);
    expect(wrongPassword.body!.message).toBe("INVALID_CREDENTIALS");

    const early = await call(s.base, "POST", "/api/v1/session/2fa/confirm", { body: { code: "123456" }, ...withCookie(cookie) });
    expect(early.status).toBe(409);

    const e = await call(s.base, "POST", "/api/v1/session/2fa/enrol", { body: { password: password("alice") }, ...withCookie(cookie) });
    expect(e.status).toBe(200);
    expect(e.body!.secret).toMatch(/^[A-Z2-7]{32}$/);
    const url = new URL(e.body!.otpauth_url);
    expect(url.protocol).toBe("otpauth:");
    expect(url.searchParams.get("secret")).toBe(e.body!.secret);
    expect(url.searchParams.get("algorithm")).toBe("SHA1");
    expect(url.searchParams.get("digits")).toBe("6");
    expect(url.searchParams.get("period")).toBe("30");
    expect(decodeURIComponent(url.pathname)).toContain("alice@example.com");
    // Pending: sign-in still needs no code, the record says off.
    expect((await s.apiJson("GET", `/api/v1/users/${uuids.alice}`)).body!.users[uuids.alice].two_factor).toBe(false);

    // A second enrol replaces the pending one: the first secret's codes no longer confirm.
    const first = e.body!.secret as string;
    const again = await call(s.base, "POST", "/api/v1/session/2fa/enrol", { body: { password: password("alice") }, ...withCookie(cookie) });
    expect(again.body!.secret).not.toBe(first);
    secrets.alice = first;
    const stale = await call(s.base, "POST", "/api/v1/session/2fa/confirm", { body: { code: await nextCode("alice") }, ...withCookie(cookie) });
    expect(stale.status).toBe(401);
    secrets.alice = again.body!.secret;
    delete lastStep.alice;

    const wrong = await call(s.base, "POST", "/api/v1/session/2fa/confirm", { body: { code: wrongCode("alice") }, ...withCookie(cookie) });
    expect(wrong.status).toBe(401);
    expect(wrong.body!.message).toBe("INVALID_CREDENTIALS");

    const ok = await call(s.base, "POST", "/api/v1/session/2fa/confirm", { body: { code: await nextCode("alice") }, ...withCookie(cookie) });
    expect(ok.status).toBe(200);
    expect(ok.body!.enabled).toBe(true);
    expect(ok.body!.recovery_codes).toHaveLength(10);
    expect(new Set(ok.body!.recovery_codes).size).toBe(10);
    for (const c of ok.body!.recovery_codes) expect(c).toMatch(/^[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}$/);

    // The caller got a new cookie; their old one, the other session and the token ended.
    const renewed = cookieOf(ok)!;
    expect(renewed).toBeTruthy();
    expect((await call(s.base, "GET", "/api/v1/session", withCookie(renewed))).status).toBe(200);
    expect((await call(s.base, "GET", "/api/v1/session", withCookie(cookie))).status).toBe(401);
    expect((await call(s.base, "GET", "/api/v1/session", withCookie(other))).status).toBe(401);
    expect((await call(s.base, "GET", "/api/v1/notes", { token })).status).toBe(401);

    expect((await s.apiJson("GET", `/api/v1/users/${uuids.alice}`)).body!.users[uuids.alice].two_factor).toBe(true);
    const twice = await call(s.base, "POST", "/api/v1/session/2fa/enrol", { body: { password: password("alice") }, ...withCookie(renewed) });
    expect(twice.status).toBe(409);
    expect(twice.body!.message).toBe("CONFLICT");
  });

  test("enrolment by bearer token works too (the token ends with the confirmation)", async () => {
    const token = await tokenFor(s.base, email("bob"), password("bob"));
    const e = await call(s.base, "POST", "/api/v1/session/2fa/enrol", { token, body: { password: password("bob") } });
    expect(e.status).toBe(200);
    secrets.bob = e.body!.secret;
    const c = await call(s.base, "POST", "/api/v1/session/2fa/confirm", { token, body: { code: await nextCode("bob") } });
    expect(c.status).toBe(200);
    expect(c.body!.enabled).toBe(true);
    expect((await call(s.base, "GET", "/api/v1/notes", { token })).status).toBe(401);
  });

  test("anonymous callers cannot enrol", async () => {
    const r = await call(s.base, "POST", "/api/v1/session/2fa/enrol", { body: { password: "x" } });
    expect(r.status).toBe(401);
  });
});

describe("sign-in with a second factor", () => {
  test("session: the password answers a ticket and no cookie; ticket + code sign in; the ticket signs in once", async () => {
    const first = await call(s.base, "POST", "/api/v1/session", { body: { email: email("alice"), password: password("alice") } });
    expect(first.status).toBe(200);
    expect(first.body!.two_factor).toBe(true);
    expect(typeof first.body!.ticket).toBe("string");
    expect(first.body!.user).toBeUndefined();
    expect(first.headers.get("set-cookie")).toBeNull();

    const wrong = await call(s.base, "POST", "/api/v1/session/2fa", { body: { ticket: first.body!.ticket, code: wrongCode("alice") } });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("set-cookie")).toBeNull();

    const ok = await call(s.base, "POST", "/api/v1/session/2fa", { body: { ticket: first.body!.ticket, code: await nextCode("alice") } });
    expect(ok.status).toBe(200);
    expect(ok.body!.user.email).toBe("alice@example.com");
    expect(ok.body!.user.two_factor).toBe(true);
    expect(ok.body!.user.totp).toBeUndefined();
    expect(typeof ok.body!.session_expires).toBe("number");
    const cookie = cookieOf(ok)!;
    expect((await call(s.base, "GET", "/api/v1/notes", withCookie(cookie))).status).toBe(200);

    const reused = await call(s.base, "POST", "/api/v1/session/2fa", { body: { ticket: first.body!.ticket, code: peekCode("alice") } });
    expect(reused.status).toBe(401);
    expect(reused.headers.get("set-cookie")).toBeNull();

    const forged = await call(s.base, "POST", "/api/v1/session/2fa", { body: { ticket: `${uuids.alice}.${"A".repeat(43)}`, code: peekCode("alice") } });
    expect(forged.status).toBe(401);
    // A ticket is bound to its user: another user's uuid in front of it is another (unknown) ticket.
    const other = await call(s.base, "POST", "/api/v1/session", { body: { email: email("bob"), password: password("bob") } });
    const swapped = `${uuids.alice}.${(other.body!.ticket as string).split(".").pop()}`;
    expect((await call(s.base, "POST", "/api/v1/session/2fa", { body: { ticket: swapped, code: peekCode("alice") } })).status).toBe(401);
  });

  test("session: e-mail, password and code in one request", async () => {
    const r = await call(s.base, "POST", "/api/v1/session", { body: { email: email("alice"), password: password("alice"), code: await nextCode("alice") } });
    expect(r.status).toBe(200);
    expect(cookieOf(r)).toBeTruthy();
    expect(r.body!.two_factor_required).toBe(false);
  });

  test("token: without a code 401 with two_factor; with it a token; a wrong code 401", async () => {
    const none = await call(s.base, "POST", "/api/v1/auth/token", { body: { email: email("bob"), password: password("bob") } });
    expect(none.status).toBe(401);
    expect(none.body!.message).toBe("UNAUTHORIZED");
    expect(none.body!.two_factor).toBe(true);
    expect(none.body!.token).toBeUndefined();

    const wrong = await call(s.base, "POST", "/api/v1/auth/token", { body: { email: email("bob"), password: password("bob"), code: wrongCode("bob") } });
    expect(wrong.status).toBe(401);
    expect(wrong.body!.message).toBe("INVALID_CREDENTIALS");

    const ok = await call(s.base, "POST", "/api/v1/auth/token", { body: { email: email("bob"), password: password("bob"), code: await nextCode("bob") } });
    expect(ok.status).toBe(200);
    expect((await call(s.base, "GET", "/api/v1/notes", { token: ok.body!.token })).status).toBe(200);
    // Renewal needs no code: the token is the proof.
    expect((await call(s.base, "GET", "/api/v1/auth/token", { token: ok.body!.token })).status).toBe(200);
  });

  test("a code is usable once: the same code again, or an older one, is refused", async () => {
    await enrolled("reuse");
    const code = await nextCode("reuse");
    const older = totp(secrets.reuse).generate({ timestamp: (lastStep.reuse - 1) * 30_000 });
    const body = { email: email("reuse"), password: password("reuse"), code };
    const first = await call(s.base, "POST", "/api/v1/auth/token", { body });
    expect(first.status).toBe(200);
    const again = await call(s.base, "POST", "/api/v1/auth/token", { body });
    expect(again.status).toBe(401);
    expect(again.body!.message).toBe("INVALID_CREDENTIALS");
    const session2 = await call(s.base, "POST", "/api/v1/session", { body });
    expect(session2.status).toBe(401);
    expect(session2.headers.get("set-cookie")).toBeNull();
    expect((await call(s.base, "POST", "/api/v1/auth/token", { body: { ...body, code: older } })).status).toBe(401);
  });

  test("the same code sent many times at once signs in once", async () => {
    await enrolled("conc");
    const code = await nextCode("conc");
    const replies = await Promise.all(Array.from({ length: 4 }, () => call(s.base, "POST", "/api/v1/auth/token", { body: { email: email("conc"), password: password("conc"), code } })));
    expect(replies.filter((r) => r.status === 200)).toHaveLength(1);
    expect(replies.filter((r) => r.status === 401)).toHaveLength(3);
  });

  test("brute force of codes: counted and locked like passwords (429 with Retry-After, even for the right code)", async () => {
    await enrolled("brute");
    for (let i = 0; i < 5; i++) {
      const r = await call(s.base, "POST", "/api/v1/auth/token", { body: { email: email("brute"), password: password("brute"), code: String(100000 + i) } });
      expect(r.status).toBe(401);
    }
    const locked = await call(s.base, "POST", "/api/v1/auth/token", { body: { email: email("brute"), password: password("brute"), code: await nextCode("brute") } });
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThan(0);
    // The ticket step is locked as well; the account's password is not what is locked.
    const t = await call(s.base, "POST", "/api/v1/session", { body: { email: email("brute"), password: password("brute") } });
    expect(t.status).toBe(200);
    const step = await call(s.base, "POST", "/api/v1/session/2fa", { body: { ticket: t.body!.ticket, code: await nextCode("brute") } });
    expect(step.status).toBe(429);
  });

  let recCodes: string[] = [];
  test("a recovery code signs in once", async () => {
    const { recovery } = await enrolled("rec");
    recCodes = recovery;
    const first = await call(s.base, "POST", "/api/v1/session", { body: { email: email("rec"), password: password("rec"), code: recovery[0].toUpperCase() } });
    expect(first.status).toBe(200);
    expect(cookieOf(first)).toBeTruthy();
    const again = await call(s.base, "POST", "/api/v1/session", { body: { email: email("rec"), password: password("rec"), code: recovery[0] } });
    expect(again.status).toBe(401);
    const viaTicket = await call(s.base, "POST", "/api/v1/session", { body: { email: email("rec"), password: password("rec") } });
    const ok = await call(s.base, "POST", "/api/v1/session/2fa", { body: { ticket: viaTicket.body!.ticket, code: recovery[1].replace(/-/g, "") } });
    expect(ok.status).toBe(200);
  });

  test("new recovery codes (password and a code) void the old ones", async () => {
    const { recovery, cookie } = await enrolled("plain");
    const wrongPw = await call(s.base, "POST", "/api/v1/session/2fa/recovery-codes", { body: { password: "wrong-wrong-wrong", code: peekCode("plain") }, ...withCookie(cookie) });
    expect(wrongPw.status).toBe(401);
    const r = await call(s.base, "POST", "/api/v1/session/2fa/recovery-codes", { body: { password: password("plain"), code: await nextCode("plain") }, ...withCookie(cookie) });
    expect(r.status).toBe(200);
    expect(r.body!.recovery_codes).toHaveLength(10);
    expect(r.body!.recovery_codes).not.toContain(recovery[2]);
    expect((await call(s.base, "POST", "/api/v1/session", { body: { email: email("plain"), password: password("plain"), code: recovery[2] } })).status).toBe(401);
    expect((await call(s.base, "POST", "/api/v1/session", { body: { email: email("plain"), password: password("plain"), code: r.body!.recovery_codes[0] } })).status).toBe(200);
  });

  test("disable with password and a recovery code: off, sessions end, sign-in needs no code again", async () => {
    const signed = await call(s.base, "POST", "/api/v1/session", { body: { email: email("rec"), password: password("rec"), code: recCodes[2] } });
    const cookie = cookieOf(signed)!;
    const other = cookieOf(await call(s.base, "POST", "/api/v1/session", { body: { email: email("rec"), password: password("rec"), code: recCodes[4] } }))!;
    const noCode = await call(s.base, "POST", "/api/v1/session/2fa/disable", { body: { password: password("rec") }, ...withCookie(cookie) });
    expect(noCode.status).toBe(400);
    const wrong = await call(s.base, "POST", "/api/v1/session/2fa/disable", { body: { password: password("rec"), code: "aaaa-bbbb-cccc-dddd" }, ...withCookie(cookie) });
    expect(wrong.status).toBe(401);
    const fresh = await call(s.base, "POST", "/api/v1/session/2fa/recovery-codes", { body: { password: password("rec"), code: await nextCode("rec") }, ...withCookie(cookie) });
    expect(fresh.status).toBe(200);
    const off = await call(s.base, "POST", "/api/v1/session/2fa/disable", { body: { password: password("rec"), code: fresh.body!.recovery_codes[3] }, ...withCookie(cookie) });
    expect(off.status).toBe(200);
    expect(off.body!.enabled).toBe(false);
    const renewed = cookieOf(off)!;
    expect((await call(s.base, "GET", "/api/v1/session", withCookie(renewed))).status).toBe(200);
    expect((await call(s.base, "GET", "/api/v1/session", withCookie(other))).status).toBe(401);
    expect((await s.apiJson("GET", `/api/v1/users/${uuids.rec}`)).body!.users[uuids.rec].two_factor).toBe(false);
    const plainSignIn = await call(s.base, "POST", "/api/v1/session", { body: { email: email("rec"), password: password("rec") } });
    expect(cookieOf(plainSignIn)).toBeTruthy();
    expect((await call(s.base, "POST", "/api/v1/session/2fa/disable", { body: { password: password("rec"), code: "123456" }, ...withCookie(renewed) })).status).toBe(409);
  });
});

describe("a role that requires two-factor sign-in", () => {
  test("a member without it may only enrol: everything else 403 needs 2fa, no token; after enrolling all is open", async () => {
    const signed = await call(s.base, "POST", "/api/v1/session", { body: { email: email("carol"), password: password("carol") } });
    expect(signed.status).toBe(200);
    expect(signed.body!.two_factor_required).toBe(true);
    const cookie = cookieOf(signed)!;
    const me = await call(s.base, "GET", "/api/v1/session", withCookie(cookie));
    expect(me.status).toBe(200);
    expect(me.body!.two_factor_required).toBe(true);

    for (const path of ["/api/v1/notes", "/api/v1/notes/n1", "/api/v1/openapi.json", "/api/v1/session/api-keys", "/api/v1/.resources"]) {
      const r = await call(s.base, "GET", path, withCookie(cookie));
      expect(r.status, path).toBe(403);
      expect(r.body!.needs, path).toBe("2fa");
      expect(r.body!.details, path).toContain("enrol");
    }
    expect((await call(s.base, "POST", "/api/v1/notes", { body: { title: "x" }, ...withCookie(cookie) })).status).toBe(403);
    const token = await call(s.base, "POST", "/api/v1/auth/token", { body: { email: email("carol"), password: password("carol") } });
    expect(token.status).toBe(403);
    expect(token.body!.needs).toBe("2fa");

    const e = await call(s.base, "POST", "/api/v1/session/2fa/enrol", { body: { password: password("carol") }, ...withCookie(cookie) });
    expect(e.status).toBe(200);
    secrets.carol = e.body!.secret;
    const c = await call(s.base, "POST", "/api/v1/session/2fa/confirm", { body: { code: await nextCode("carol") }, ...withCookie(cookie) });
    expect(c.status).toBe(200);
    const renewed = cookieOf(c)!;
    expect((await call(s.base, "GET", "/api/v1/notes", withCookie(renewed))).status).toBe(200);
    expect((await call(s.base, "GET", "/api/v1/session", withCookie(renewed))).body!.two_factor_required).toBe(false);
    const t = await call(s.base, "POST", "/api/v1/auth/token", { body: { email: email("carol"), password: password("carol"), code: await nextCode("carol") } });
    expect(t.status).toBe(200);
    expect((await call(s.base, "GET", "/api/v1/notes", { token: t.body!.token })).status).toBe(200);
  });

  test("a role that starts requiring it stops its members' tokens until they enrol", async () => {
    await role("later", ["view-notes"]);
    await user("lena", "later");
    const token = await tokenFor(s.base, email("lena"), password("lena"));
    expect((await call(s.base, "GET", "/api/v1/notes", { token })).status).toBe(200);
    expect((await s.apiJson("PATCH", `/api/v1/roles/${roles.later}`, { require_2fa: true })).status).toBe(200);
    const r = await call(s.base, "GET", "/api/v1/notes", { token });
    expect(r.status).toBe(403);
    expect(r.body!.needs).toBe("2fa");
    expect((await call(s.base, "GET", "/api/v1/auth/token", { token })).status).toBe(403);
  });
});

describe("an administrator's reset", () => {
  test("manage-users resets someone's 2FA (their sessions end); a caller without it, or on a stronger user, is refused", async () => {
    await enrolled("dave");
    await role("plainrole", ["view-notes"]);
    await user("erin", "plainrole");
    const erin = await enrolled("erin");
    const daveToken = (await call(s.base, "POST", "/api/v1/auth/token", { body: { email: email("dave"), password: password("dave"), code: await nextCode("dave") } })).body!.token as string;
    const veraToken = await tokenFor(s.base, email("vera"), password("vera"));

    const refused = await call(s.base, "DELETE", `/api/v1/users/${uuids.erin}/2fa`, { token: veraToken });
    expect(refused.status).toBe(403);
    expect(refused.body!.needs).toBe("manage-users");
    // alice's role (view-notes) is covered by dave's; the admin's (all) is not.
    const covered = await call(s.base, "DELETE", `/api/v1/users/${uuids.alice}/2fa`, { token: daveToken });
    expect(covered.status).toBe(200);
    const admin = (await s.apiJson("GET", "/api/v1/users?filter=email:admin@example.com")).body!.users;
    const adminUuid = Object.keys(admin)[0];
    const onAdmin = await call(s.base, "DELETE", `/api/v1/users/${adminUuid}/2fa`, { token: daveToken });
    expect(onAdmin.status).toBe(403);
    expect((await call(s.base, "DELETE", "/api/v1/users/nobody-here/2fa", { token: daveToken })).status).toBe(404);
    expect((await call(s.base, "POST", `/api/v1/users/${uuids.erin}/2fa`, { token: daveToken })).status).toBe(405);

    const ok = await call(s.base, "DELETE", `/api/v1/users/${uuids.erin}/2fa`, { token: daveToken });
    expect(ok.status).toBe(200);
    expect(ok.body!.enabled).toBe(false);
    expect((await call(s.base, "GET", "/api/v1/session", withCookie(erin.cookie))).status).toBe(401);
    const signIn = await call(s.base, "POST", "/api/v1/session", { body: { email: email("erin"), password: password("erin") } });
    expect(cookieOf(signIn)).toBeTruthy();

    const byAdmin = await s.apiJson("DELETE", `/api/v1/users/${uuids.dave}/2fa`);
    expect(byAdmin.status).toBe(200);
    expect((await call(s.base, "GET", "/api/v1/notes", { token: daveToken })).status).toBe(401);
  });
});

describe("resd user 2fa-reset", () => {
  test("the shell's way out (a sole admin who lost the phone): off, sessions end; an unknown address exits 2", async () => {
    await user("lost", "member");
    const { cookie } = await enrolled("lost");
    const r = await cli(s.dir, ["user", "2fa-reset", email("lost")]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("off");
    expect((await call(s.base, "GET", "/api/v1/session", withCookie(cookie))).status).toBe(401);
    expect(cookieOf(await call(s.base, "POST", "/api/v1/session", { body: { email: email("lost"), password: password("lost") } }))).toBeTruthy();
    expect((await cli(s.dir, ["user", "2fa-reset", "ghost@example.com"])).code).toBe(2);
  });
});

describe("two_factor on user records", () => {
  test("every user the API returns carries a read-only two_factor; writes naming it or the hidden state are refused", async () => {
    const list = await s.apiJson("GET", "/api/v1/users?limit=100");
    expect(list.status).toBe(200);
    const users = Object.values(list.body!.users) as Record<string, unknown>[];
    for (const u of users) {
      expect(typeof u.two_factor).toBe("boolean");
      for (const hidden of ["totp", "session_epoch", "api_epoch", "token_epoch", "password"]) expect(u[hidden]).toBeUndefined();
    }
    const byEmail = Object.fromEntries(users.map((u) => [u.email, u.two_factor]));
    expect(byEmail["bob@example.com"]).toBe(true);
    expect(byEmail["vera@example.com"]).toBe(false);

    for (const body of [{ two_factor: false }, { totp: null }, { session_epoch: "x" }, { api_epoch: "x" }]) {
      const r = await s.apiJson("PATCH", `/api/v1/users/${uuids.bob}`, body);
      expect(r.status, JSON.stringify(body)).toBe(422);
    }
    const create = await s.apiJson("POST", "/api/v1/users", { email: "sneaky@example.com", password: "sneaky-password", two_factor: true });
    expect(create.status).toBe(422);
    // An ordinary change keeps the state: bob still needs his code.
    expect((await s.apiJson("PATCH", `/api/v1/users/${uuids.bob}`, { name: "Bob" })).body!.users[uuids.bob].two_factor).toBe(true);
    const none = await call(s.base, "POST", "/api/v1/auth/token", { body: { email: email("bob"), password: password("bob") } });
    expect(none.body!.two_factor).toBe(true);
  });
});

describe("the OpenAPI document", () => {
  const TWO_FA = ["/api/v1/session/2fa", "/api/v1/session/2fa/confirm", "/api/v1/session/2fa/disable", "/api/v1/session/2fa/enrol", "/api/v1/session/2fa/recovery-codes"];
  const KEYS = ["/api/v1/session/api-keys", "/api/v1/session/api-keys/{id}"];
  const ours = (doc: Record<string, any>) => Object.keys(doc.paths).filter((p) => p.includes("/2fa") || p.includes("/api-keys")).sort();

  test("the admin: every endpoint, valid, with the statuses; a user: their own; a key: none", async () => {
    const admin = (await s.apiJson("GET", "/api/v1/openapi.json")).body!;
    await SwaggerParser.validate(structuredClone(admin) as never);
    expect(ours(admin)).toEqual([...TWO_FA, ...KEYS, "/api/v1/users/{uuid}/2fa"].sort());
    expect(admin.paths["/api/v1/session/2fa"].post.security).toEqual([]);
    expect(Object.keys(admin.paths["/api/v1/session/2fa/enrol"].post.responses).sort()).toEqual(expect.arrayContaining(["200", "400", "401", "403", "409", "429"]));
    expect(Object.keys(admin.paths["/api/v1/session/api-keys"].post.responses)).toEqual(expect.arrayContaining(["201", "401", "403", "409", "422", "429"]));
    expect(admin.paths["/api/v1/auth/token"].post.requestBody.content["application/json"].schema.properties.code).toBeDefined();
    expect(admin.components.schemas.ApiKey.required).toEqual(["id", "name", "created", "expires", "last_used", "permissions"]);

    const vera = await tokenFor(s.base, email("vera"), password("vera"));
    expect(ours((await call(s.base, "GET", "/api/v1/openapi.json", { token: vera })).body!)).toEqual([...TWO_FA, ...KEYS].sort());
    const key = await call(s.base, "POST", "/api/v1/session/api-keys", { token: vera, body: { name: "doc", password: password("vera") } });
    expect(ours((await call(s.base, "GET", "/api/v1/openapi.json", { token: key.body!.key })).body!)).toEqual([]);
  });
});

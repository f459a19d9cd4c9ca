/**
 * The admin's account pages (issue 37, docs/accounts.md) in chromium against the real server,
 * which sends its mails to a real SMTP server on 127.0.0.1: "Forgot password?" and the link from
 * the mail; an e-mail change from the profile page and its confirmation link; two-factor sign-in
 * set up on the profile page (the code made here from the secret the page shows) and the code step
 * of the next sign-in; a member whose role requires it led to set it up first; an invitation from
 * the users overview that the invitee accepts through the link; resending it and resetting someone's
 * two-factor sign-in from the row menu; a personal API key made on the profile page that works as
 * a bearer token until it is revoked; a password changed on the profile page.
 *
 * The links in the mails start with RESD_PUBLIC_URL, which cannot be the test server's own address
 * (its port is known only once it runs): the test opens their path and query on the test server.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chromium, type Browser, type Page } from "playwright-core";
import * as OTPAuth from "otpauth";
import { adminSite } from "./helpers/site";
import { addUser, call } from "./helpers/access";
import { mailBox, type MailBox } from "./helpers/smtp";
import { expectNoAxeViolations } from "./helpers/axe";

const PUBLIC = "https://cms.example.org";
let box: MailBox;
let s: Awaited<ReturnType<typeof adminSite>>;
let browser: Browser;

beforeAll(async () => {
  box = await mailBox();
  s = await adminSite({ env: { RESD_SMTP_URL: box.url, RESD_PUBLIC_URL: PUBLIC, RESD_SITE_NAME: "Example CMS", RESD_JOB_POLL: "50" } });
  for (const name of ["ann", "bob", "cat", "dan", "fay"]) await addUser(s.dir, `${name}@example.com`, `${name}-password-1`, { api: true });
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await s?.cleanup();
  await box?.stop();
});

/** A link from a mail, on the test server. */
const here = (link: string) => {
  const u = new URL(link);
  expect(u.origin).toBe(PUBLIC);
  return s.base + u.pathname + u.search;
};

/** A page in a browser of its own (no session: as a link opened from a mail on another device). */
async function freshPage(): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: "en-US" });
  const page = await context.newPage();
  page.on("close", () => void context.close().catch(() => {}));
  page.on("pageerror", (e) => console.error("pageerror:", e.message));
  page.on("dialog", (d) => void d.accept());
  return page;
}

/** Fills and sends the sign-in form at /admin/sign-in (the page is there already). */
async function fillSignIn(page: Page, email: string, password: string): Promise<void> {
  await page.getByLabel("E-mail").fill(email);
  await page.getByLabel("Password", { exact: true }).fill(password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
}

/** A fresh page signed in through the form, at `path`. */
async function signedIn(email: string, password: string, path = "/admin"): Promise<Page> {
  const page = await freshPage();
  await page.goto(`${s.base}/admin/sign-in?next=${encodeURIComponent(path)}`);
  await fillSignIn(page, email, password);
  await page.waitForURL((u) => u.pathname === path);
  await who(page, email).waitFor();
  return page;
}

/** The top bar's name of the signed-in user (a link to their profile). */
const who = (page: Page, email: string) => page.locator("header.topbar a.who").filter({ hasText: email });

/** A TOTP code of the secret: at `offset` steps of 30 s from now (the server takes each step once). */
const codeOf = (secret: string, offset = 0) => new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret) }).generate({ timestamp: Date.now() + offset * 30_000 });

describe("password reset", () => {
  test("Forgot password? → a mail → the link sets a new password → signing in with it; the link works once and offers a new one", async () => {
    const page = await freshPage();
    await page.goto(`${s.base}/admin/sign-in`);
    await page.getByLabel("E-mail").fill("ann@example.com");
    await page.getByRole("button", { name: "Forgot password?" }).click();
    // The address typed for signing in is offered again.
    expect(await page.getByLabel("E-mail").inputValue()).toBe("ann@example.com");
    await expectNoAxeViolations(page, "the forgot-password form");
    await page.getByRole("button", { name: "Send the link" }).click();
    await page.getByRole("status").filter({ hasText: "If ann@example.com has an account, a mail with a link to set a new password is on its way." }).waitFor();
    await page.close();

    const mail = await box.next((m) => m.to.includes("ann@example.com") && m.subject.startsWith("Reset your password"));
    const link = here(box.link(mail, "/admin/reset-password"));

    // Opened in another browser, without a session.
    const other = await freshPage();
    await other.goto(link);
    await other.getByRole("heading", { name: "Set a new password" }).waitFor();
    await other.getByLabel("New password", { exact: true }).fill("ann-new-password-2");
    await other.getByLabel("Repeat the new password").fill("ann-new-password-x");
    await other.getByRole("button", { name: "Set the new password" }).click();
    await other.getByRole("alert").filter({ hasText: "The two passwords differ." }).waitFor();
    // The server's rule for a password's length, in the page's words.
    await other.getByLabel("New password", { exact: true }).fill("short");
    await other.getByLabel("Repeat the new password").fill("short");
    await other.getByRole("button", { name: "Set the new password" }).click();
    await other.getByRole("alert").filter({ hasText: /The password must be at least \d+ characters long\./ }).waitFor();
    await other.getByLabel("New password", { exact: true }).fill("ann-new-password-2");
    await other.getByLabel("Repeat the new password").fill("ann-new-password-2");
    await other.getByRole("button", { name: "Set the new password" }).click();
    await other.getByRole("heading", { name: "Password set" }).waitFor();
    await other.getByRole("link", { name: "Sign in" }).click();
    await other.waitForURL((u) => u.pathname === "/admin/sign-in");
    expect(await other.getByLabel("E-mail").inputValue()).toBe("ann@example.com");
    await other.getByLabel("Password", { exact: true }).fill("ann-new-password-2");
    await other.getByRole("button", { name: "Sign in", exact: true }).click();
    await other.waitForURL((u) => u.pathname === "/admin");
    await who(other, "ann@example.com").waitFor();
    await other.close();

    // The same link again: used up; the page says so and leads to a new one.
    const again = await freshPage();
    await again.goto(link);
    await again.getByLabel("New password", { exact: true }).fill("ann-third-password-3");
    await again.getByLabel("Repeat the new password").fill("ann-third-password-3");
    await again.getByRole("button", { name: "Set the new password" }).click();
    await again.getByRole("heading", { name: "This link does not work any more" }).waitFor();
    await expectNoAxeViolations(again, "the reset page with a used link");
    await again.getByRole("link", { name: "Ask for a new link" }).click();
    await again.getByRole("button", { name: "Send the link" }).waitFor();
    await again.close();
    expect((await call(s.base, "POST", "/api/v1/session", { body: { email: "ann@example.com", password: "ann-third-password-3" } })).status).toBe(401);
  });
});

describe("e-mail change", () => {
  test("asked on the profile page (reached from the top bar), confirmed through the link from the new mailbox; the new address signs in, the old one no longer", async () => {
    const page = await signedIn("bob@example.com", "bob-password-1");
    await who(page, "bob@example.com").click();
    await page.waitForURL((u) => u.pathname === "/admin/profile");
    const form = page.getByRole("form", { name: "E-mail address" });
    await form.getByLabel("New e-mail address").fill("bob.new@example.com");
    await form.getByLabel("Your password").fill("wrong-password");
    await form.getByRole("button", { name: "Change e-mail address" }).click();
    await form.getByRole("alert").filter({ hasText: "The password is wrong." }).waitFor();
    await form.getByLabel("Your password").fill("bob-password-1");
    await form.getByRole("button", { name: "Change e-mail address" }).click();
    await form.getByRole("status").filter({ hasText: "Check your new mailbox: we sent a link to bob.new@example.com. Your address stays bob@example.com until you open it." }).waitFor();
    await expectNoAxeViolations(page, "the profile page");
    await page.close();

    const mail = await box.next((m) => m.to.includes("bob.new@example.com"));
    const link = here(box.link(mail, "/admin/confirm-email"));
    const other = await freshPage();
    await other.goto(link);
    await other.getByRole("heading", { name: "E-mail address changed" }).waitFor();
    expect(await other.getByRole("status").textContent()).toContain("bob.new@example.com");
    // Used once: opening it again says it no longer works.
    await other.goto(link);
    await other.getByRole("heading", { name: "The address did not change" }).waitFor();
    await other.close();

    const again = await signedIn("bob.new@example.com", "bob-password-1");
    await again.close();
    const old = await freshPage();
    await old.goto(`${s.base}/admin/sign-in`);
    await fillSignIn(old, "bob@example.com", "bob-password-1");
    await old.getByRole("alert").filter({ hasText: "E-mail or password is wrong." }).waitFor();
    await old.close();
  });
});

describe("two-factor sign-in", () => {
  let secret = "";
  let recovery: string[] = [];

  test("set up on the profile page: password, QR code and key, a first code, the recovery codes shown once", async () => {
    const page = await signedIn("cat@example.com", "cat-password-1", "/admin/profile");
    const part = page.locator("#two-factor");
    expect(await part.locator("[data-two-factor]").getAttribute("data-two-factor")).toBe("off");
    await part.getByRole("button", { name: "Set up two-factor sign-in" }).click();
    await part.getByLabel("Your password").fill("cat-password-1");
    await part.getByRole("button", { name: "Continue" }).click();
    const qr = part.getByRole("img", { name: "QR code for your authenticator app" });
    await qr.waitFor();
    // Drawn in the page from the otpauth URL: an SVG image that loaded.
    expect(await qr.evaluate((el) => {
      const img = el as unknown as { complete: boolean; naturalWidth: number; src: string };
      return img.complete && img.naturalWidth > 0 && img.src.startsWith("data:image/svg+xml");
    })).toBe(true);
    secret = (await part.locator("code.secret").getAttribute("data-secret"))!;
    expect(secret).toMatch(/^[A-Z2-7]{16,}$/);
    expect((await part.locator("code.secret").textContent())!.replace(/\s/g, "")).toBe(secret);
    await expectNoAxeViolations(page, "the profile page while setting up two-factor sign-in");

    await part.getByLabel("The 6-digit code the app shows").fill("000000" === codeOf(secret) ? "111111" : "000000");
    await part.getByRole("button", { name: "Turn on two-factor sign-in" }).click();
    await part.getByRole("alert").filter({ hasText: "The code is wrong" }).waitFor();
    await part.getByLabel("The 6-digit code the app shows").fill(codeOf(secret));
    await part.getByRole("button", { name: "Turn on two-factor sign-in" }).click();
    const codes = part.getByRole("region", { name: "Your recovery codes" });
    await codes.waitFor();
    recovery = await codes.locator("li code").allTextContents();
    expect(recovery.length).toBe(10);
    expect(await codes.getByRole("link", { name: "Download the codes" }).getAttribute("download")).toBe("recovery-codes.txt");
    await codes.getByRole("button", { name: "I have saved them" }).click();
    await codes.waitFor({ state: "detached" });
    expect(await part.locator("[data-two-factor]").getAttribute("data-two-factor")).toBe("on");
    // The session was made anew with the switch: the page goes on working.
    await page.reload();
    await part.locator('[data-two-factor="on"]').waitFor();
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL((u) => u.pathname === "/admin/sign-in");
    await page.close();
  });

  test("the next sign-in asks for the code after the password; a wrong code is refused; a recovery code works once", async () => {
    expect(secret).not.toBe("");
    const page = await freshPage();
    await page.goto(`${s.base}/admin/sign-in?next=${encodeURIComponent("/admin/profile")}`);
    await fillSignIn(page, "cat@example.com", "cat-password-1");
    await page.getByRole("heading", { name: "Two-factor sign-in" }).waitFor();
    // No session yet: only the code step.
    expect((await page.context().cookies()).some((c) => c.name.startsWith("resd"))).toBe(false);
    await expectNoAxeViolations(page, "the code step of the sign-in");
    const wrong = codeOf(secret, -3);
    await page.getByLabel("Code", { exact: true }).fill(wrong);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("alert").filter({ hasText: "The code is wrong or was used already." }).waitFor();
    // The step after the one the enrolment took (the server takes each step once).
    await page.getByLabel("Code", { exact: true }).fill(codeOf(secret, 1));
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.waitForURL((u) => u.pathname === "/admin/profile");
    await who(page, "cat@example.com").waitFor();
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL((u) => u.pathname === "/admin/sign-in");

    await fillSignIn(page, "cat@example.com", "cat-password-1");
    await page.getByLabel("Code", { exact: true }).fill(recovery[0].toUpperCase());
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.waitForURL((u) => u.pathname === "/admin");
    await who(page, "cat@example.com").waitFor();
    await page.close();

    // The recovery code is used up.
    const first = await call(s.base, "POST", "/api/v1/session", { body: { email: "cat@example.com", password: "cat-password-1" } });
    expect(first.body!.two_factor).toBe(true);
    expect((await call(s.base, "POST", "/api/v1/session/2fa", { body: { ticket: first.body!.ticket, code: recovery[0] } })).status).toBe(401);
  });

  test("an administrator sees who has it in the users overview and resets it from the row menu", async () => {
    const page = await signedIn(s.email, "admin-password", "/admin/users");
    const row = page.locator("tr[data-uuid]").filter({ hasText: "cat@example.com" });
    await row.locator('td[data-col="two_factor"] [aria-label="yes"]').waitFor();
    expect(await page.locator("tr[data-uuid]").filter({ hasText: "dan@example.com" }).locator('td[data-col="two_factor"] [aria-label="no"]').count()).toBe(1);
    await row.getByRole("button", { name: /^Actions for/ }).click();
    await page.getByRole("menuitem", { name: "Reset two-factor sign-in" }).click();
    await page.getByRole("status").filter({ hasText: "Two-factor sign-in of cat@example.com is off." }).waitFor();
    await row.locator('td[data-col="two_factor"] [aria-label="no"]').waitFor();
    await page.close();
    expect((await call(s.base, "POST", "/api/v1/session", { body: { email: "cat@example.com", password: "cat-password-1" } })).body!.two_factor).toBeUndefined();
  });

  test("a member of a role that requires it lands on setting it up, whatever page they open, and has the admin once it is on", async () => {
    const role = await s.apiJson("POST", "/api/v1/roles", { name: "guarded", permissions: ["view-users"], require_2fa: true });
    expect(role.status).toBe(201);
    const made = await s.apiJson("POST", "/api/v1/users", { email: "gil@example.com", password: "gil-password-1", role: Object.keys(role.body!.roles)[0] });
    expect(made.status).toBe(201);

    const page = await freshPage();
    await page.goto(`${s.base}/admin/sign-in?next=${encodeURIComponent("/admin/users")}`);
    await fillSignIn(page, "gil@example.com", "gil-password-1");
    await page.waitForURL((u) => u.pathname === "/admin/profile");
    await page.getByRole("alert").filter({ hasText: "Set up two-factor sign-in to continue." }).waitFor();
    // Nothing but the enrolment: no menus, no other parts of the profile.
    expect(await page.locator("header.topbar nav").count()).toBe(0);
    expect(await page.getByRole("form", { name: "Password" }).count()).toBe(0);
    await page.goto(`${s.base}/admin/users`);
    await page.waitForURL((u) => u.pathname === "/admin/profile");
    const part = page.locator("#two-factor");
    await part.getByLabel("Your password").fill("gil-password-1");
    await part.getByRole("button", { name: "Continue" }).click();
    const key = (await part.locator("code.secret").getAttribute("data-secret"))!;
    await part.getByLabel("The 6-digit code the app shows").fill(codeOf(key));
    await part.getByRole("button", { name: "Turn on two-factor sign-in" }).click();
    await part.getByRole("button", { name: "I have saved them" }).click();
    await page.locator("header.topbar nav").waitFor();
    await page.getByRole("form", { name: "Password" }).waitFor();
    await page.goto(`${s.base}/admin/users`);
    await page.locator("tr[data-uuid]").first().waitFor();
    await page.close();
  });
});

describe("invitations", () => {
  test("invited from the users overview; the invitee chooses a password through the mail's link and signs in; a second invitation is refused with the reason", async () => {
    const role = await s.apiJson("POST", "/api/v1/roles", { name: "editors", permissions: ["view-users"] });
    expect(role.status).toBe(201);
    const page = await signedIn(s.email, "admin-password", "/admin/users");
    await page.getByRole("button", { name: "Invite", exact: true }).click();
    const dialog = page.locator("dialog[open]");
    await dialog.getByRole("option", { name: "editors" }).waitFor({ state: "attached" });
    await dialog.getByLabel("E-mail").fill("new.person@example.com");
    await dialog.getByLabel("Name").fill("New Person");
    await dialog.getByLabel("Role").selectOption({ label: "editors" });
    await expectNoAxeViolations(page, "the invite dialog");
    await dialog.getByRole("button", { name: "Send the invitation" }).click();
    await page.getByRole("status").filter({ hasText: "Invited new.person@example.com" }).waitFor();
    await dialog.waitFor({ state: "detached" });
    const row = page.locator("tr[data-uuid]").filter({ hasText: "new.person@example.com" });
    await row.waitFor();
    const uuid = (await row.getAttribute("data-uuid"))!;
    expect((await s.apiJson("GET", `/api/v1/users/${uuid}`)).body!.users[uuid]).toMatchObject({ name: "New Person", role: Object.keys(role.body!.roles)[0] });

    const mail = await box.next((m) => m.to.includes("new.person@example.com"));
    const link = here(box.link(mail, "/admin/reset-password"));
    expect(new URL(link).searchParams.get("invite")).toBe("1");
    const invitee = await freshPage();
    await invitee.goto(link);
    await invitee.getByRole("heading", { name: "Choose your password" }).waitFor();
    await invitee.getByLabel("New password", { exact: true }).fill("new-person-password-1");
    await invitee.getByLabel("Repeat the new password").fill("new-person-password-1");
    await invitee.getByRole("button", { name: "Set my password" }).click();
    await invitee.getByRole("heading", { name: "Password set" }).waitFor();
    await invitee.getByRole("link", { name: "Sign in" }).click();
    await invitee.getByLabel("Password", { exact: true }).fill("new-person-password-1");
    await invitee.getByRole("button", { name: "Sign in", exact: true }).click();
    await invitee.waitForURL((u) => u.pathname === "/admin");
    await who(invitee, "new.person@example.com").waitFor();
    await invitee.close();

    // Accepted: the row menu's resend is refused, and the page says why.
    await row.getByRole("button", { name: /^Actions for/ }).click();
    await page.getByRole("menuitem", { name: "Resend invitation" }).click();
    await page.getByRole("alert").filter({ hasText: "new.person@example.com has chosen a password already" }).waitFor();
    await page.close();
  });

  test("resending an invitation nobody accepted yet sends a new link", async () => {
    const page = await signedIn(s.email, "admin-password", "/admin/users");
    await page.getByRole("button", { name: "Invite", exact: true }).click();
    const dialog = page.locator("dialog[open]");
    await dialog.getByLabel("E-mail").fill("late@example.com");
    await dialog.getByRole("button", { name: "Send the invitation" }).click();
    const row = page.locator("tr[data-uuid]").filter({ hasText: "late@example.com" });
    await row.waitFor();
    await box.next((m) => m.to.includes("late@example.com"));
    await row.getByRole("button", { name: /^Actions for/ }).click();
    await page.getByRole("menuitem", { name: "Resend invitation" }).click();
    await page.getByRole("status").filter({ hasText: "Sent a new invitation to late@example.com" }).waitFor();
    const deadline = Date.now() + 10_000;
    while (box.mails.filter((m) => m.to.includes("late@example.com")).length < 2 && Date.now() < deadline) await Bun.sleep(50);
    const [first, second] = box.mails.filter((m) => m.to.includes("late@example.com")).map((m) => box.link(m, "/admin/reset-password"));
    expect(second).toBeDefined();
    expect(second).not.toBe(first);
    await page.close();
  });
});

describe("personal API keys", () => {
  test("made on the profile page, shown once, working as a bearer token until revoked", async () => {
    const page = await signedIn("dan@example.com", "dan-password-1", "/admin/profile");
    const keys = page.getByRole("region", { name: "API keys" });
    await keys.getByText("You have no API keys.").waitFor();
    const form = keys.getByRole("form", { name: "New key" });
    await form.getByLabel("Name").fill("ci");
    await form.getByLabel("Expires after (days)").fill("30");
    await form.getByLabel("Your password").fill("dan-password-1");
    await form.getByRole("button", { name: "Create key" }).click();
    const made = keys.getByRole("region", { name: "Your new key “ci”" });
    await made.waitFor();
    const key = await made.getByLabel("API key").inputValue();
    expect(key).toMatch(/^resd_/);
    await keys.locator("tr[data-key-id]").filter({ hasText: "ci" }).waitFor();
    await expectNoAxeViolations(page, "the profile page with a new API key");
    await made.getByRole("button", { name: "Done" }).click();
    await made.waitFor({ state: "detached" });
    expect(await page.locator("input[data-key]").count()).toBe(0);

    const use = () => call(s.base, "GET", "/api/v1/.resources", { token: key });
    const ok = await use();
    expect(ok.status).toBe(200);
    expect(ok.body!.user.email).toBe("dan@example.com");

    await keys.getByRole("button", { name: "Revoke ci" }).click();
    await keys.getByRole("status").filter({ hasText: "Revoked “ci”." }).waitFor();
    await keys.getByText("You have no API keys.").waitFor();
    expect((await use()).status).toBe(401);
    await page.close();
  });
});

describe("password change", () => {
  test("on the profile page: the current password, the new one twice; the new one signs in", async () => {
    const page = await signedIn("fay@example.com", "fay-password-1", "/admin/profile");
    const form = page.getByRole("form", { name: "Password" });
    await form.getByLabel("Current password").fill("wrong-password");
    await form.getByLabel("New password", { exact: true }).fill("fay-new-password-2");
    await form.getByLabel("Repeat the new password").fill("fay-new-password-2");
    await form.getByRole("button", { name: "Change password" }).click();
    await form.getByRole("alert").filter({ hasText: "The current password is wrong." }).waitFor();
    await form.getByLabel("Current password").fill("fay-password-1");
    await form.getByRole("button", { name: "Change password" }).click();
    await form.getByRole("status").filter({ hasText: "Password changed." }).waitFor();
    // This page's session was made anew: it goes on working.
    await page.reload();
    await who(page, "fay@example.com").waitFor();
    await page.close();
    expect((await call(s.base, "POST", "/api/v1/session", { body: { email: "fay@example.com", password: "fay-password-1" } })).status).toBe(401);
    const again = await signedIn("fay@example.com", "fay-new-password-2");
    await again.close();
  });
});

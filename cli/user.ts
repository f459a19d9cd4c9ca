import type { Command } from "commander";
import { addUser, findRole, listUsers, removeUser, setApiAccess, setPassword } from "../src/core/accounts";
import { invite, makeResetLink } from "../src/core/access/account-reset";
import { SYSTEM } from "../src/core/access/permissions";
import { mailConfigured } from "../src/core/mail/send";
import { findUserByEmail } from "../src/core/access/users";
import { action, withSite } from "./common";
import { badRequest, notFound } from "../src/core/errors";
import { resetTwoFactor } from "../src/core/access/totp";
import { readNewPassword } from "./prompt";

type Opts = { dir?: string; json?: boolean };
type PasswordOpts = { password?: string; passwordStdin?: boolean };
const print = (opts: Opts, data: unknown, text: string) => console.log(opts.json ? JSON.stringify(data) : text);

/**
 * The password from --password-stdin (its first line; kept out of `ps` and shell history), from
 * --password (visible to other users of the machine while the command runs: documented), or typed
 * twice at the terminal without echo when neither is given.
 */
async function passwordOf(o: PasswordOpts): Promise<string> {
  if (o.passwordStdin && o.password !== undefined) throw badRequest("give --password or --password-stdin, not both");
  if (o.passwordStdin) {
    const line = (await Bun.stdin.text()).split(/\r?\n/)[0];
    if (!line) throw badRequest("--password-stdin: standard input holds no password");
    return line;
  }
  if (o.password !== undefined) return o.password;
  if (process.stdin.isTTY) return readNewPassword();
  throw badRequest("give the password with --password-stdin (or --password, or run on a terminal to be asked)");
}

export function registerUser(program: Command) {
  const user = program.command("user").description("manage user accounts");
  user.command("add <email>")
    .description("create a user")
    .option("--password <password>", "the user's password (visible in `ps`: prefer --password-stdin)")
    .option("--password-stdin", "read the password from the first line of standard input")
    .option("--if-missing", "succeed without change when a user with this e-mail exists (idempotent seeding)")
    .option("--role <role>", "role name (e.g. admin)")
    .option("--name <name>", "display name")
    .option("--api", "switch on API access (bearer tokens)")
    .option("--dir <dir>", "site directory")
    .option("--json", "print the created user as JSON")
    .action(action(async (email: string, o: Opts & PasswordOpts & { role?: string; name?: string; api?: boolean; ifMissing?: boolean }) => {
      const u = await withSite(o, async (site) => {
        const existing = o.ifMissing ? await findUserByEmail(site, email) : null;
        // Asked only when it will be used: --if-missing on an existing user needs no password.
        return existing ? null : addUser(site, { email, password: await passwordOf(o), role: o.role, name: o.name, api: o.api });
      });
      if (u) print(o, u, `created user ${u.email} (${u.uuid})`);
      else print(o, { ok: true, email, existed: true }, `user ${email} exists; left unchanged (--if-missing)`);
    }));
  user.command("list")
    .description("list users")
    .option("--dir <dir>", "site directory")
    .option("--json", "print JSON")
    .action(action(async (o: Opts) => {
      const users = await withSite(o, listUsers);
      print(o, users, users.map((u) => `${u.uuid}\t${u.email}\t${u.role_name ?? (u.role ? `(deleted role ${u.role})` : "")}\tapi=${u.api ? "on" : "off"}\t${u.name ?? ""}`).join("\n") || "no users");
    }));
  user.command("passwd <email>")
    .description("set a user's password (their tokens stop working)")
    .option("--password <password>", "the new password (visible in `ps`: prefer --password-stdin)")
    .option("--password-stdin", "read the new password from the first line of standard input")
    .option("--dir <dir>", "site directory")
    .option("--json", "print JSON")
    .action(action(async (email: string, o: Opts & PasswordOpts) => {
      const password = await passwordOf(o);
      await withSite(o, (site) => setPassword(site, email, password));
      print(o, { ok: true, email }, `password changed for ${email}`);
    }));
  user.command("api <email>")
    .description("switch a user's API access on or off")
    .option("--on", "allow bearer tokens")
    .option("--off", "refuse bearer tokens (existing tokens stop at once)")
    .option("--dir <dir>", "site directory")
    .option("--json", "print JSON")
    .action(action(async (email: string, o: Opts & { on?: boolean; off?: boolean }) => {
      if (!!o.on === !!o.off) throw badRequest("give exactly one of --on or --off");
      await withSite(o, (site) => setApiAccess(site, email, !!o.on));
      print(o, { ok: true, email, api: !!o.on }, `API access ${o.on ? "on" : "off"} for ${email}`);
    }));
  user.command("remove <email>")
    .description("delete a user")
    .option("--dir <dir>", "site directory")
    .option("--json", "print JSON")
    .action(action(async (email: string, o: Opts) => {
      await withSite(o, (site) => removeUser(site, email));
      print(o, { ok: true, email }, `removed ${email}`);
    }));
  user.command("2fa-reset <email>")
    .description("switch off a user's two-factor sign-in (a lost phone); their sessions and tokens end")
    .option("--dir <dir>", "site directory")
    .option("--json", "print JSON")
    .action(action(async (email: string, o: Opts) => {
      await withSite(o, async (site) => {
        const found = await findUserByEmail(site, email);
        if (!found) throw notFound(`no user with e-mail ${email}`);
        await resetTwoFactor(site, SYSTEM, found.uuid);
      });
      print(o, { ok: true, email, enabled: false }, `two-factor sign-in off for ${email}`);
    }));
  user.command("reset-link <email>")
    .description("print a one-time link to set the user's password (no mail needed; valid RESD_RESET_TTL seconds)")
    .option("--dir <dir>", "site directory")
    .option("--json", "print JSON")
    .action(action(async (email: string, o: Opts) => {
      const r = await withSite(o, (site) => makeResetLink(site, email));
      print(o, { email, link: r.link, expires: Math.floor(r.expires / 1000) }, r.link);
    }));
  user.command("invite <email>")
    .description("create a user without a password and send them a link to choose one (printed instead when no mail is set up)")
    .option("--role <role>", "role name or uuid")
    .option("--name <name>", "display name")
    .option("--print-link", "print the link rather than mailing it")
    .option("--dir <dir>", "site directory")
    .option("--json", "print JSON")
    .action(action(async (email: string, o: Opts & { role?: string; name?: string; printLink?: boolean }) => {
      const r = await withSite(o, async (site) => {
        const role = o.role === undefined ? undefined : (await findRole(site, o.role))?.uuid ?? o.role;
        return invite(site, SYSTEM, { email, role, name: o.name }, { mail: mailConfigured(site) && !o.printLink });
      });
      const uuid = r.user.uuid;
      if (r.link) print(o, { uuid, email, link: r.link }, r.link);
      else print(o, { uuid, email, mailed: true }, `invited ${email} (${uuid}): the mail is queued and sent by the server`);
    }));
}

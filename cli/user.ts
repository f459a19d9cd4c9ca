import type { Command } from "commander";
import { addUser, listUsers, removeUser, setApiAccess, setPassword } from "../src/core/access/accounts";
import { action, withSite } from "./common";
import { badRequest } from "../src/core/errors";

type Opts = { dir?: string; json?: boolean };
const print = (opts: Opts, data: unknown, text: string) => console.log(opts.json ? JSON.stringify(data) : text);

export function registerUser(program: Command) {
  const user = program.command("user").description("manage user accounts");
  user.command("add <email>")
    .description("create a user")
    .requiredOption("--password <password>", "the user's password")
    .option("--role <role>", "role name (e.g. admin)")
    .option("--name <name>", "display name")
    .option("--api", "switch on API access (bearer tokens)")
    .option("--dir <dir>", "site directory")
    .option("--json", "print the created user as JSON")
    .action(action(async (email: string, o: Opts & { password: string; role?: string; name?: string; api?: boolean }) => {
      const u = await withSite(o, (site) => addUser(site, { email, password: o.password, role: o.role, name: o.name, api: o.api }));
      print(o, u, `created user ${u.email} (${u.uuid})`);
    }));
  user.command("list")
    .description("list users")
    .option("--dir <dir>", "site directory")
    .option("--json", "print JSON")
    .action(action(async (o: Opts) => {
      const users = await withSite(o, listUsers);
      print(o, users, users.map((u) => `${u.uuid}\t${u.email}\t${u.role ?? ""}\tapi=${u.api ? "on" : "off"}\t${u.name ?? ""}`).join("\n") || "no users");
    }));
  user.command("passwd <email>")
    .description("set a user's password (their tokens stop working)")
    .requiredOption("--password <password>", "the new password")
    .option("--dir <dir>", "site directory")
    .option("--json", "print JSON")
    .action(action(async (email: string, o: Opts & { password: string }) => {
      await withSite(o, (site) => setPassword(site, email, o.password));
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
}

import type { Command } from "commander";
import { addRole, findRole, listRoles, removeRole, roleHolders, setRolePermissions, unknownResourcePermissions, type RoleSummary } from "../src/core/accounts";
import type { Site } from "../src/core/site";
import { badRequest } from "../src/core/errors";
import { action, withSite } from "./common";

type Opts = { dir?: string; json?: boolean };
const print = (opts: Opts, data: unknown, text: string) => console.log(opts.json ? JSON.stringify(data) : text);
const line = (r: RoleSummary) => `${r.uuid}\t${r.name}\t${r.permissions.join(",")}`;

/** A permission such as `view-notse` grants nothing on this site: say so, without refusing it (the resource may come later). */
function warnUnknown(site: Site, permissions: string[]) {
  for (const p of unknownResourcePermissions(site, permissions)) console.error(`resd: note: ${p} names no resource of this site (yet)`);
}

export function registerRole(program: Command) {
  const role = program.command("role").description("manage roles and their permissions");
  role.command("list")
    .description("list roles with their permissions")
    .option("--dir <dir>", "site directory")
    .option("--json", "print JSON")
    .action(action(async (o: Opts) => {
      const roles = await withSite(o, listRoles);
      print(o, roles, roles.map(line).join("\n") || "no roles");
    }));
  role.command("add <name> [permissions...]")
    .description("create a role, e.g. `resd role add editor view-notes edit-notes`")
    .option("--if-missing", "succeed without change when a role of this name exists (idempotent seeding)")
    .option("--dir <dir>", "site directory")
    .option("--json", "print the created role as JSON")
    .action(action(async (name: string, permissions: string[], o: Opts & { ifMissing?: boolean }) => {
      const out = await withSite(o, async (site) => {
        const existing = o.ifMissing ? await findRole(site, name) : null;
        if (existing) return { role: existing, created: false };
        warnUnknown(site, permissions);
        return { role: await addRole(site, name, permissions), created: true };
      });
      if (out.created) print(o, out.role, `created role ${out.role.name} (${out.role.uuid})`);
      else print(o, { ...out.role, existed: true }, `role ${name} exists; left unchanged (--if-missing)`);
    }));
  role.command("set <name> [permissions...]")
    .description("replace a role's permissions (none given: the role keeps no permission)")
    .option("--dir <dir>", "site directory")
    .option("--json", "print the role as JSON")
    .action(action(async (name: string, permissions: string[], o: Opts) => {
      const r = await withSite(o, async (site) => {
        warnUnknown(site, permissions);
        return setRolePermissions(site, name, permissions);
      });
      print(o, r, `role ${r.name} now has: ${r.permissions.join(", ") || "(no permission)"}`);
    }));
  role.command("remove <name>")
    .description("delete a role (refused while users hold it, unless --force)")
    .option("--force", "delete it anyway: its users keep no permission until given another role")
    .option("--dir <dir>", "site directory")
    .option("--json", "print JSON")
    .action(action(async (name: string, o: Opts & { force?: boolean }) => {
      await withSite(o, async (site) => {
        const holders = o.force ? [] : await roleHolders(site, name);
        if (holders.length) {
          const who = holders.slice(0, 3).map((u) => u.email).join(", ") + (holders.length > 3 ? ", …" : "");
          throw badRequest(`${holders.length} user(s) hold role ${name} (${who}); give them another role first, or --force`);
        }
        await removeRole(site, name);
      });
      print(o, { ok: true, name }, `removed role ${name}`);
    }));
}

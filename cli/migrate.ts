import type { Command } from "commander";
import { action, withSite } from "./common";

export function registerMigrate(program: Command) {
  program
    .command("migrate")
    .description("bring the database schema and indexes up to date with the definitions")
    .option("--dir <dir>", "site directory")
    .option("--json", "print the changes as JSON")
    .action(action(async (opts: { dir?: string; json?: boolean }) => {
      // Opening a site syncs tables and indexes with the definitions; report what that changed.
      const changes = await withSite(opts, async (site) => site.schemaChanges);
      if (opts.json) console.log(JSON.stringify({ ok: true, changes }));
      else console.log(changes.length ? changes.map((c) => `${c.resource}: ${c.action} ${c.detail}`).join("\n") : "schema up to date");
    }));
}

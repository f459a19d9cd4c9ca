import type { Command } from "commander";
import { openSite } from "../src/core/site";
import { loadDefinitions } from "../src/core/definitions/load";
import { action, config } from "./common";

export function registerMigrate(program: Command) {
  program
    .command("migrate")
    .description("bring the database schema and indexes up to date with the definitions")
    .option("--dir <dir>", "site directory")
    .option("--json", "print the changes as JSON")
    .action(action(async (opts: { dir?: string; json?: boolean }) => {
      const site = await openSite(config(opts));
      try {
        // openSite already synced; run again to report what a second pass would change (nothing).
        const changes = await site.store.syncSchema(loadDefinitions(site.config.dir).values());
        if (opts.json) console.log(JSON.stringify({ ok: true, changes }));
        else console.log(changes.length ? changes.map((c) => `${c.resource}: ${c.action} ${c.detail}`).join("\n") : "schema up to date");
      } finally {
        await site.close();
      }
    }));
}

import type { Command } from "commander";
import { tokenForEmail } from "../src/core/accounts";
import { action, withSite } from "./common";

export function registerToken(program: Command) {
  program
    .command("token <email>")
    .description("print a fresh bearer token for a user with API access")
    .option("--dir <dir>", "site directory")
    .option("--json", "print token, token_created and token_expires as JSON")
    .action(action(async (email: string, o: { dir?: string; json?: boolean }) => {
      const t = await withSite(o, (site) => tokenForEmail(site, email));
      console.log(o.json ? JSON.stringify(t) : t.token);
    }));
}

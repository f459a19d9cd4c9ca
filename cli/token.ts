import type { Command } from "commander";
import { tokenForEmail } from "../src/core/accounts";
import { apiKeysOf, createApiKey, revokeApiKey, type ApiKeyInfo } from "../src/core/access/api-keys";
import { findUserByEmail } from "../src/core/access/users";
import { badRequest, notFound } from "../src/core/errors";
import type { Site } from "../src/core/site";
import { action, withSite } from "./common";

type Opts = { dir?: string; json?: boolean };

async function owner(site: Site, email: string) {
  const user = await findUserByEmail(site, email);
  if (!user) throw notFound(`no user with e-mail ${email}`);
  return user;
}

const when = (s: number | null) => (s === null ? "-" : new Date(s * 1000).toISOString().replace(/\.\d+Z$/, "Z"));
const line = (k: ApiKeyInfo) => [k.id, k.name, when(k.created), when(k.expires), when(k.last_used), k.permissions?.join(",") ?? "(all of the user's rights)"].join("\t");

/**
 * `resd token EMAIL`: a fresh short-lived bearer token. `resd token create|list|revoke`: personal
 * API keys (src/core/access/api-keys.ts), for scripts and CI.
 */
export function registerToken(program: Command) {
  // --dir and --json come with the global options of a command group (cli/main.ts).
  const token = program
    .command("token")
    .argument("<email>")
    .description("print a fresh bearer token for a user with API access; or manage API keys (create, list, revoke)")
    .action(action(async (email: string, o: Opts) => {
      const t = await withSite(o, (site) => tokenForEmail(site, email));
      console.log(o.json ? JSON.stringify(t) : t.token);
    }));
  token.command("create <email>")
    .description("make a personal API key (printed this once); the user needs API access")
    .requiredOption("--name <name>", "what the key is for, e.g. ci (1-100 characters)")
    .option("--expires <days>", "days until it expires, fractions allowed (default: never)")
    .option("--permissions <list>", "comma-separated permissions, each held by the user's role (default: all of the user's rights)")
    .option("--dir <dir>", "site directory")
    .option("--json", "print id, name, key, created, expires and permissions as JSON")
    .action(action(async (email: string, o: Opts & { name: string; expires?: string; permissions?: string }) => {
      const days = o.expires === undefined ? undefined : /^\d+(\.\d+)?$/.test(o.expires) ? Number(o.expires) : NaN;
      if (Number.isNaN(days)) throw badRequest("--expires takes a number of days (0.5: twelve hours)");
      const permissions = o.permissions === undefined ? undefined : o.permissions.split(",").map((s) => s.trim()).filter(Boolean);
      const made = await withSite(o, async (site) => createApiKey(site, await owner(site, email), { name: o.name, expires_in_days: days, permissions }));
      console.log(o.json ? JSON.stringify({ id: made.id, name: made.name, key: made.key, created: made.created, expires: made.expires, permissions: made.permissions }) : made.key);
    }));
  token.command("list <email>")
    .description("list a user's API keys: id, name, created, expires, last used, permissions")
    .option("--dir <dir>", "site directory")
    .option("--json", "print JSON")
    .action(action(async (email: string, o: Opts) => {
      const keys = await withSite(o, async (site) => apiKeysOf(site, await owner(site, email)));
      console.log(o.json ? JSON.stringify(keys) : keys.map(line).join("\n") || "no API keys");
    }));
  token.command("revoke <id>")
    .description("revoke an API key at once")
    .option("--dir <dir>", "site directory")
    .option("--json", "print JSON")
    .action(action(async (id: string, o: Opts) => {
      await withSite(o, (site) => revokeApiKey(site, id, null));
      console.log(o.json ? JSON.stringify({ revoked: id }) : `revoked API key ${id}`);
    }));
}

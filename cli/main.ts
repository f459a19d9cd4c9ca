#!/usr/bin/env bun
/** resd's command line: one file per command, each a thin layer over src/core. */
import { Command, CommanderError } from "commander";
import { globalOptions, isClosedPipe } from "./common";
import { version, commit } from "../src/build/version";
import { registerServe } from "./serve";
import { registerMigrate } from "./migrate";
import { registerUser } from "./user";
import { registerRole } from "./role";
import { registerToken } from "./token";
import { registerConfig } from "./config";
import { registerBackup } from "./backup";
import { registerRestore } from "./restore";
import { registerJobs } from "./jobs";
import { registerImport } from "./import";
import { registerExport } from "./export";

// A closed stdout (`resd export R | head -2`) ends the command quietly, exit 0.
process.stdout.on("error", (e) => { if (isClosedPipe(e)) process.exit(0); });

const program = new Command()
  .name("resd")
  .description("a self-hosted generic resource REST service")
  .version(`resd ${version} (${commit})`, "-v, --version")
  // Usage errors (unknown command or option, missing argument) exit 2 like every other refusal
  // of the input; help and version exit 0. Set before the commands so they inherit it.
  .exitOverride()
  // `resd --dir X user list` (or `resd user --dir X list`) as well as `resd user list --dir X`:
  // options before a subcommand belong to the command before it and are handed down; the
  // subcommand's own, after it, win when both are given.
  .enablePositionalOptions();
const withGlobalOptions = (c: Command) => c
  .option("--dir <dir>", "site directory, for any command (default: current directory, or RESD_DIR)")
  .option("--json", "machine-readable output, for any command that prints a result");
withGlobalOptions(program);

registerServe(program);
registerMigrate(program);
registerUser(program);
registerRole(program);
registerToken(program);
registerConfig(program);
registerBackup(program);
registerRestore(program);
registerJobs(program);
registerImport(program);
registerExport(program);
for (const group of program.commands) if (group.commands.length) withGlobalOptions(group);
program.hook("preAction", (_program, command) => globalOptions(command));

try {
  await program.parseAsync(process.argv);
} catch (e) {
  if (!(e instanceof CommanderError)) throw e;
  process.exit(e.exitCode === 0 ? 0 : 2);
}

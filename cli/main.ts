#!/usr/bin/env bun
/** resd's command line: one file per command, each a thin layer over src/core. */
import { Command } from "commander";
import { version, commit } from "../src/build/version";
import { registerServe } from "./serve";
import { registerMigrate } from "./migrate";
import { registerUser } from "./user";
import { registerToken } from "./token";
import { registerConfig } from "./config";
import { registerBackup } from "./backup";
import { registerRestore } from "./restore";
import { registerJobs } from "./jobs";
import { registerImport } from "./import";
import { registerExport } from "./export";

const program = new Command()
  .name("resd")
  .description("a self-hosted generic resource REST service")
  .version(`resd ${version} (${commit})`, "-v, --version");

registerServe(program);
registerMigrate(program);
registerUser(program);
registerToken(program);
registerConfig(program);
registerBackup(program);
registerRestore(program);
registerJobs(program);
registerImport(program);
registerExport(program);

await program.parseAsync(process.argv);

/**
 * Version and commit of this resd build.
 *
 * `bun build.ts` defines two global constants at compile time (Bun.build
 * `define`):
 *   RESD_VERSION  - "version" from package.json, e.g. "0.1.0"
 *   RESD_COMMIT   - `git rev-parse --short HEAD`, or "unknown" outside git
 * The bundler replaces them with string literals in the executable. When the
 * app runs from source (`bun cli/main.ts`) they are not defined, so this module
 * falls back to package.json's version and the commit "dev".
 *
 * Usage anywhere in the app:
 *   import { version, commit } from "../src/build/version.ts";
 *   console.log(`resd ${version} (${commit})`);
 * Do not reference RESD_VERSION / RESD_COMMIT elsewhere: go through this module.
 */
import pkg from "../../package.json" with { type: "json" };

declare const RESD_VERSION: string | undefined;
declare const RESD_COMMIT: string | undefined;

export const version: string = typeof RESD_VERSION === "string" ? RESD_VERSION : pkg.version;
export const commit: string = typeof RESD_COMMIT === "string" ? RESD_COMMIT : "dev";
/** True inside the executable built by build.ts, false when running from source. */
export const embedded: boolean = typeof RESD_VERSION === "string";

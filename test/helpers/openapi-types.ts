/**
 * Generates TypeScript types from an OpenAPI document with openapi-typescript, which needs the
 * TypeScript 5 compiler API (resd itself builds with TypeScript 7, which has none): the package's
 * own "typescript" is pointed at typescript5 (installed under that name) by a nested link.
 *   bun test/helpers/openapi-types.ts DOC.json OUT.d.ts
 */
import { existsSync, mkdirSync, symlinkSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");
const nested = join(ROOT, "node_modules/openapi-typescript/node_modules/typescript");
if (!existsSync(nested)) {
  mkdirSync(dirname(nested), { recursive: true });
  symlinkSync(join(ROOT, "node_modules/typescript5"), nested, "dir");
}
const [docFile, outFile] = process.argv.slice(2);
const { default: openapiTS, astToString } = await import("openapi-typescript");
const doc = JSON.parse(await Bun.file(docFile).text());
await Bun.write(outFile, astToString(await openapiTS(doc)));

/**
 * The house rules (docs/architecture.md), checked by `bun run lint` and in CI: imports point one
 * way, and no module reaches back up through a cycle.
 */
module.exports = {
  forbidden: [
    {
      name: "no-cycles",
      severity: "error",
      comment: "A cycle ties modules that should stand on their own: move the shared piece down (a type, a port).",
      from: {},
      to: { circular: true },
    },
    {
      name: "core-knows-no-http",
      severity: "error",
      comment: "src/core is the domain: it never imports the HTTP layer, the CLI or the admin app.",
      from: { path: "^src/core/" },
      to: { path: "^(src/http|src/admin|cli)/" },
    },
    {
      name: "http-not-cli",
      severity: "error",
      comment: "src/http translates HTTP to core calls; the CLI is another door to the same core.",
      from: { path: "^src/http/" },
      to: { path: "^(cli|src/admin)/" },
    },
    {
      name: "admin-speaks-only-the-api",
      severity: "error",
      comment: "src/admin is a browser app: it talks to the server over HTTP and takes from src/core types only.",
      from: { path: "^src/admin/" },
      to: { path: "^(src/http|cli)/|^src/core/", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "cli-through-core",
      severity: "error",
      comment: "cli/ translates argv to core calls (serve starts the HTTP server, the one exception).",
      from: { path: "^cli/", pathNot: "^cli/serve\\.ts$" },
      to: { path: "^(src/http|src/admin)/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(node_modules|dist|test|bench)/" },
    parser: "swc",
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "require", "node", "default", "types"], extensions: [".ts", ".tsx", ".js", ".json"] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};

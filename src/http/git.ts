/**
 * Deploying definitions from git (docs/editing.md "Deploying with git"): `GET /api/v1/git-status`
 * (`view-git`) and `POST /api/v1/git-pull` (`pull-git`), both also granted by `(all)`. The work is in
 * src/core/git; their shapes are resd's own (the spec lists the paths only).
 */
import { Elysia } from "elysia";
import { badRequest, methodNotAllowed } from "../core/errors";
import { gitPull } from "../core/git/pull";
import { gitStatus } from "../core/git/status";
import type { Site } from "../core/site";
import { handle } from "./context";
import { json } from "./envelope";

const NO_STORE = { "cache-control": "no-store" };

export const gitRoutes = (site: Site) =>
  new Elysia({ name: "git" })
    .all("/api/v1/git-status", ({ request }) => handle(site, request, async (c) => {
      if (c.request.method !== "GET" && c.request.method !== "HEAD") throw methodNotAllowed("GET");
      const asked = c.url().searchParams.getAll("fetch");
      if (asked.length > 1 || (asked.length === 1 && asked[0] !== "0" && asked[0] !== "1")) {
        throw badRequest(`fetch must be 0 (do not fetch) or 1 (fetch, the default), not ${JSON.stringify(asked.join(",")).slice(0, 60)}`);
      }
      const fetch = asked[0] !== "0";
      const git = await gitStatus(c.site, await c.principal(), { fetch });
      return json(200, { git }, c.t0, NO_STORE);
    }), { parse: "none" })
    .all("/api/v1/git-pull", ({ request }) => handle(site, request, async (c) => {
      if (c.request.method !== "POST") throw methodNotAllowed("POST");
      const r = await gitPull(c.site, await c.principal());
      return json(200, { count: r.pulled.commits.length, ...r }, c.t0, NO_STORE);
    }), { parse: "none" });

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const errors = (...codes: number[]) => Object.fromEntries(codes.map((c) => [String(c), { $ref: `#/components/responses/E${c}` }]));
const str = { type: "string" };
const int = { type: "integer" };
const strings = { type: "array", items: str };
const commit = { type: "object", properties: { commit: str, subject: str, author: str, time: { type: "integer", description: "seconds since the epoch" } } };
const envelope = (description: string, props: Record<string, unknown>) => ({
  description, content: { "application/json": { schema: { allOf: [ref("Envelope"), { type: "object", properties: props }] } } },
});

/**
 * The two endpoints in the OpenAPI document of a caller who may use them: `may` is core/git's
 * `gitAccess` (view-git, pull-git or (all), read from the caller's role).
 */
export function gitPaths(paths: Record<string, unknown>, may: { view: boolean; pull: boolean } | undefined): void {
  if (may?.view) {
    paths["/api/v1/git-status"] = { get: {
      tags: ["resd:admin"], operationId: "resd:admin.git_status",
      summary: "The site folder's git state: branch, upstream, last commit, behind/ahead, local changes (fetches first, at most 20 s; needs view-git)",
      parameters: [{ name: "fetch", in: "query", required: false, schema: { type: "string", enum: ["0", "1"] }, description: "0: do not fetch, show what is known; 1 (the default): fetch first. Anything else is a 400 naming `fetch`" }],
      responses: { "200": envelope("the git state; `available: false` with the reason when the folder is no git checkout or git is missing", { git: { type: "object", properties: {
        available: { type: "boolean" }, reason: str, root: str, prefix: str, branch: { ...str, nullable: true }, upstream: { ...str, nullable: true }, upstream_reason: str,
        remote: { type: "object", nullable: true, properties: { name: str, url: { ...str, nullable: true, description: "credentials masked" } } },
        head: { ...commit, nullable: true }, ahead: { ...int, nullable: true }, behind: { ...int, nullable: true },
        changed: { type: "array", items: { type: "object", properties: { path: str, state: str, from: str } } }, changed_count: int,
        fetched: { type: "boolean" }, fetch_reason: str, fetched_at: { ...int, nullable: true },
      } } }), ...errors(400, 401, 403) },
    } };
  }
  if (may?.pull) {
    paths["/api/v1/git-pull"] = { post: {
      tags: ["resd:admin"], operationId: "resd:admin.git_pull",
      summary: "Fast-forward the site folder to its upstream after validating the new definitions and schema changes; serves them at once (needs pull-git)",
      responses: {
        "200": envelope("what was pulled (`commits: []` when up to date)", {
          pulled: { type: "object", properties: { from: str, to: str, branch: str, upstream: str, commits: { type: "array", items: commit }, changed: strings } },
          definitions: { type: "object", properties: { added: strings, changed: strings, removed: strings } },
          migrations: { type: "array", items: { type: "object", properties: { resource: str, action: str, detail: str } } },
          restart_needed: { type: "boolean" }, restart_files: strings, note: str,
        }),
        ...errors(401, 403),
        "409": { description: "refused (`refusal`: no-upstream, diverged, local-changes, busy, not-a-checkout, merge-failed), git's words in `details`", content: { "application/json": { schema: ref("Error") } } },
        "422": { description: "a definition (or extension code) of the new commit is invalid, or the database refuses its schema change: `file`, `field`; nothing changed", content: { "application/json": { schema: ref("Error") } } },
        "502": { description: "BAD_GATEWAY: the fetch failed (git's words, credentials masked)", content: { "application/json": { schema: ref("Error") } } },
      },
    } };
  }
}

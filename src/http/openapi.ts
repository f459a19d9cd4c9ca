/**
 * `GET /api/v1/openapi.json`: the caller's OpenAPI document (anonymous callers are refused).
 * `GET /swagger`: Swagger UI loading that document. The UI's script and stylesheet come from the
 * swagger-ui-dist package and are embedded into the executable (`with { type: "file" }`), so the
 * page works with no network. (@elysiajs/swagger 1.3.1 loads them from a CDN and documents the
 * routes rather than the caller's permissions, so it is not used.)
 */
import { Elysia } from "elysia";
// @ts-expect-error -- a file import: Bun gives the (embedded) path of the asset, not a module.
import bundlePath from "swagger-ui-dist/swagger-ui-bundle.js" with { type: "file" };
// @ts-expect-error -- as above.
import cssPath from "swagger-ui-dist/swagger-ui.css" with { type: "file" };
import { methodNotAllowed, unauthorized } from "../core/errors";
import type { Site } from "../core/site";
import { handle } from "./context";
import { buildOpenApi } from "./openapi-doc";
import { gitAccess } from "../core/git/access";

// The document follows the caller's permissions, so the page first asks for it; when the visitor is
// not signed in (401) it shows a sign-in form (POST /api/v1/session, same origin) and then loads.
// Its script and styles are files of their own: the page's policy allows no inline script or style
// (see security-headers.ts).
const page = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>resd API</title>
  <link rel="stylesheet" href="/swagger/swagger-ui.css">
  <link rel="stylesheet" href="/swagger/page.css">
</head>
<body>
  <form id="signin" hidden>
    <h1>resd API</h1>
    <p>Sign in to see the operations you may use.</p>
    <input name="email" type="email" placeholder="E-mail" autocomplete="username" required>
    <input name="password" type="password" placeholder="Password" autocomplete="current-password" required>
    <button>Sign in</button>
    <output></output>
  </form>
  <div id="swagger-ui"></div>
  <script src="/swagger/swagger-ui-bundle.js"></script>
  <script src="/swagger/page.js"></script>
</body>
</html>`;

const pageCss = `#signin { max-width: 22rem; margin: 4rem auto; font-family: sans-serif; display: grid; gap: .6rem; }
#signin[hidden] { display: none; }
#signin input, #signin button { font-size: 1rem; padding: .5rem; }
#signin output { color: #b00020; min-height: 1.2em; }
`;

const pageJs = `const form = document.getElementById("signin");
async function load() {
  const res = await fetch("/api/v1/openapi.json", { credentials: "same-origin" });
  if (res.status === 401) { form.hidden = false; return; }
  window.ui = SwaggerUIBundle({ spec: await res.json(), dom_id: "#swagger-ui" });
}
form.addEventListener("submit", async (e) => {
  e.preventDefault();
  const body = JSON.stringify(Object.fromEntries(new FormData(form)));
  const res = await fetch("/api/v1/session", { method: "POST", headers: { "content-type": "application/json" }, body, credentials: "same-origin" });
  if (!res.ok) { form.querySelector("output").textContent = (await res.json()).details || "sign-in failed"; return; }
  form.hidden = true;
  load();
});
load();
`;

const asset = (path: string, type: string) => () =>
  new Response(Bun.file(path), { headers: { "content-type": type, "cache-control": "public, max-age=86400" } });

export const openApiRoutes = (site: Site) =>
  new Elysia({ name: "openapi" })
    .all("/api/v1/openapi.json", ({ request }) =>
      handle(site, request, async (c) => {
        if (request.method !== "GET") throw methodNotAllowed("GET");
        const p = await c.principal();
        if (p.kind === "anonymous") throw unauthorized("the OpenAPI document lists what the caller may do; sign in or send a bearer token");
        // A user without API access, signed in by session, cannot obtain a token: no token operations.
        const row = p.viaSession && p.uuid ? await site.store.get("users", p.uuid) : null;
        const tokens = !row || (JSON.parse(row.data) as { api?: unknown }).api === true;
        return new Response(JSON.stringify(buildOpenApi(site, p, "/", { tokens, git: await gitAccess(site, p) })), {
          headers: { "content-type": "application/json; charset=utf-8", "cache-control": "private, no-store" },
        });
      }), { parse: "none" })
    .get("/swagger", () => new Response(page, { headers: { "content-type": "text/html; charset=utf-8" } }))
    .get("/swagger/swagger-ui-bundle.js", asset(bundlePath as string, "text/javascript; charset=utf-8"))
    .get("/swagger/swagger-ui.css", asset(cssPath as string, "text/css; charset=utf-8"))
    // Checked again on every load (they are tiny), so a new release's page never runs an old script.
    .get("/swagger/page.js", () => new Response(pageJs, { headers: { "content-type": "text/javascript; charset=utf-8", "cache-control": "no-cache" } }))
    .get("/swagger/page.css", () => new Response(pageCss, { headers: { "content-type": "text/css; charset=utf-8", "cache-control": "no-cache" } }));

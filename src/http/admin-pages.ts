/**
 * `/admin` and everything under it: the admin pages' HTML for every path (deep links work on
 * reload; the app routes in the browser) and their hashed assets, cached for a year and gzipped
 * when the browser accepts it.
 */
import { Elysia } from "elysia";
import { bundleAdmin, parseBundle, type AdminBundle } from "../build/admin-bundle";
import { notFound } from "../core/errors";
import type { Site } from "../core/site";
import { handle } from "./context";

declare const RESD_ADMIN_BUNDLE: string | undefined;

type Served = { html: Uint8Array; htmlGz: Uint8Array; assets: Map<string, { type: string; body: Uint8Array; gz: Uint8Array }> };

let served: Promise<Served> | null = null;

function prepare(b: AdminBundle): Served {
  const html = new TextEncoder().encode(b.html);
  const assets = new Map(b.assets.map((a) => [a.name, { type: a.type, body: a.body, gz: Bun.gzipSync(a.body as Uint8Array<ArrayBuffer>) }]));
  return { html, htmlGz: Bun.gzipSync(html), assets };
}

/** Embedded by `bun build.ts`; from source, bundled once on first use. */
function bundle(): Promise<Served> {
  served ??= (typeof RESD_ADMIN_BUNDLE === "string" ? Promise.resolve(parseBundle(RESD_ADMIN_BUNDLE)) : bundleAdmin()).then(prepare);
  served.catch(() => (served = null));
  return served;
}

function answer(request: Request, type: string, body: Uint8Array, gz: Uint8Array, cache: string): Response {
  const zipped = /\bgzip\b/.test(request.headers.get("accept-encoding") ?? "");
  const headers: Record<string, string> = { "content-type": type, "cache-control": cache, vary: "accept-encoding" };
  if (zipped) headers["content-encoding"] = "gzip";
  return new Response((zipped ? gz : body) as Uint8Array<ArrayBuffer>, { headers });
}

const page = async (request: Request) => {
  const b = await bundle();
  // The page itself is always checked again, so a new release is picked up at once.
  return answer(request, "text/html; charset=utf-8", b.html, b.htmlGz, "no-cache");
};

export const adminPageRoutes = (site: Site) =>
  new Elysia({ name: "admin-pages" })
    .get("/admin", ({ request }) => handle(site, request, () => page(request)))
    .get("/admin/assets/:file", ({ request, params }) => handle(site, request, async () => {
      const a = (await bundle()).assets.get(params.file);
      if (!a) throw notFound(`no admin asset ${params.file}`);
      return answer(request, a.type, a.body, a.gz, "public, max-age=31536000, immutable");
    }))
    .get("/admin/*", ({ request }) => handle(site, request, () => page(request)));

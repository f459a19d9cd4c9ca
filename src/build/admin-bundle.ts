/**
 * Bundles the admin pages (src/admin, Preact) for the browser: hashed file names, so the pages
 * can be cached for a year and fetched once. `bun build.ts` embeds the result into the
 * executable; from source the server bundles on the first request to /admin.
 */
import { basename, join } from "node:path";

export type AdminAsset = { name: string; type: string; body: Uint8Array };
export type AdminBundle = { html: string; assets: AdminAsset[] };

const ENTRY = join(import.meta.dir, "../admin/main.tsx");

export async function bundleAdmin(): Promise<AdminBundle> {
  const r = await Bun.build({
    entrypoints: [ENTRY],
    target: "browser",
    minify: true,
    // The html editor (Tiptap) is most of the code: a chunk of its own, loaded when a form needs it.
    splitting: true,
    naming: { entry: "[name]-[hash].[ext]", chunk: "[name]-[hash].[ext]", asset: "[name]-[hash].[ext]" },
    define: { "process.env.NODE_ENV": JSON.stringify("production") },
    throw: false,
  });
  if (!r.success) throw new Error(`admin bundle failed:\n${r.logs.map(String).join("\n")}`);
  const assets: AdminAsset[] = [];
  for (const out of r.outputs) {
    assets.push({ name: basename(out.path), type: out.type, body: new Uint8Array(await out.arrayBuffer()) });
  }
  const js = assets.find((a) => a.name.startsWith("main-") && a.name.endsWith(".js"));
  const css = assets.filter((a) => a.name.endsWith(".css"));
  if (!js) throw new Error("admin bundle produced no script");
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>resd admin</title>
<link rel="icon" href="data:,">
${css.map((a) => `<link rel="stylesheet" href="/admin/assets/${a.name}">`).join("\n")}
<script type="module" src="/admin/assets/${js.name}"></script>
</head>
<body><div id="app"></div></body>
</html>
`;
  return { html, assets };
}

/** The bundle as one string for a build-time constant (bodies base64). */
export const serializeBundle = (b: AdminBundle) =>
  JSON.stringify({ html: b.html, assets: b.assets.map((a) => ({ name: a.name, type: a.type, body: Buffer.from(a.body).toString("base64") })) });

export function parseBundle(text: string): AdminBundle {
  const raw = JSON.parse(text) as { html: string; assets: { name: string; type: string; body: string }[] };
  return { html: raw.html, assets: raw.assets.map((a) => ({ name: a.name, type: a.type, body: new Uint8Array(Buffer.from(a.body, "base64")) })) };
}

/**
 * `/api/v1/{resource}/export`, `/import` and `/import-document`. Static last segments win over
 * `/api/v1/:resource/:uuid` in Elysia's router, so records with these uuids are not reachable by
 * GET/PUT/DELETE (docs/transfer.md).
 */
import { Elysia } from "elysia";
import { badRequest, methodNotAllowed } from "../core/errors";
import { exportRecords } from "../core/transfer/export";
import { parseFormat } from "../core/transfer/format";
import { importRecords } from "../core/transfer/import";
import { proposeFromDocument } from "../core/transfer/document";
import type { Site } from "../core/site";
import { handle, type Ctx } from "./context";
import { json } from "./envelope";
import { spoolFilePart, type SpooledPart } from "./upload-body";

const only = (c: Ctx, method: string) => {
  if (c.request.method !== method) throw methodNotAllowed(method);
};

async function exportRoute(c: Ctx, resource: string): Promise<Response> {
  only(c, "GET");
  const file = exportRecords(c.site, await c.principal(), resource, parseFormat(c.url().searchParams.get("format")));
  const enc = new TextEncoder();
  const it = file.chunks[Symbol.asyncIterator]();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await it.next();
      if (next.done) controller.close();
      else controller.enqueue(enc.encode(next.value));
    },
    async cancel() {
      await it.return?.();
    },
  });
  return new Response(body, {
    headers: { "content-type": file.contentType, "content-disposition": `attachment; filename="${file.filename}"`, "cache-control": "no-store" },
  });
}

async function importRoute(c: Ctx, resource: string): Promise<Response> {
  only(c, "POST");
  const p = await c.principal();
  const strict = /^(1|true|yes)$/i.test(c.url().searchParams.get("strict") ?? "");
  // A migration may bring records before their files (documented in docs/transfer.md).
  const allowMissingFiles = c.url().searchParams.get("missing_files") === "allow";
  const upload = await spoolFilePart(c.site, c.request);
  let r: Awaited<ReturnType<typeof importRecords>>;
  try {
    r = await importRecords(c.site, p, resource, upload.file, { name: upload.name, strict, allowMissingFiles, match: c.url().searchParams.get("match") ?? undefined });
  } finally {
    upload.remove();
  }
  const body = { stats: r.stats, errors_detail: r.errors_detail, format: r.format, resource_created: r.resource_created };
  if (r.rolled_back) return json(422, { message: "INVALID_DATA", details: "rows were rejected and strict is on: nothing was written", ...body }, c.t0);
  return json(200, body, c.t0);
}

async function importDocumentRoute(c: Ctx, resource: string): Promise<Response> {
  only(c, "POST");
  const p = await c.principal();
  let upload: SpooledPart | null = null;
  try {
    const proposal = await proposeFromDocument(c.site, p, resource, async () => (upload = await spoolFilePart(c.site, c.request)));
    return json(200, { ...proposal }, c.t0);
  } finally {
    (upload as SpooledPart | null)?.remove();
  }
}

export const transferRoutes = (site: Site) =>
  new Elysia({ name: "transfer" })
    .all("/api/v1/:resource/export", ({ request, params }) => handle(site, request, (c) => exportRoute(c, params.resource)), { parse: "none" })
    .all("/api/v1/:resource/import", ({ request, params }) => handle(site, request, (c) => importRoute(c, params.resource)), { parse: "none" })
    .all("/api/v1/:resource/import-document", ({ request, params }) => handle(site, request, (c) => importDocumentRoute(c, params.resource)), { parse: "none" });

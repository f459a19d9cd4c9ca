/**
 * Reading uploads without holding them in memory: the body cut off with 413 past a limit, and a
 * multipart part streamed to a temporary file for readers that need a file (import, .docx).
 */
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { AppError, badRequest } from "../core/errors";
import { tooLarge } from "../core/files/upload";
import { multipartBoundary, readMultipart } from "../core/files/multipart";
import type { Site } from "../core/site";
import { uploadSpoolDir } from "../core/leftovers";

/** Room for multipart framing and small fields on top of the file itself. */
export const FRAMING_ALLOWANCE = 64 * 1024;

/**
 * The body, cut off with 413 once it passes `bodyMax` bytes. A declared Content-Length is only
 * believed without Transfer-Encoding (the body-limit rule); otherwise the streamed bytes count.
 */
export async function* limitedBody(request: Request, bodyMax: number, max: number): AsyncGenerator<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (!request.headers.has("transfer-encoding") && declared !== null && Number(declared) > bodyMax) throw tooLarge(max);
  if (!request.body) return;
  let seen = 0;
  for await (const chunk of request.body) {
    seen += chunk.length;
    if (seen > bodyMax) throw tooLarge(max);
    yield chunk;
  }
}

export type SpooledPart = { file: Blob; name: string; remove(): void };


/**
 * Streams the multipart part `file` into DIR/data/tmp within RESD_MAX_UPLOAD; the caller removes it.
 * Other parts are skipped.
 */
export async function spoolFilePart(site: Site, request: Request): Promise<SpooledPart> {
  const boundary = multipartBoundary(request.headers.get("content-type"));
  if (!boundary) throw badRequest("send the file as multipart/form-data in a part named `file`");
  const max = site.config.maxUpload;
  const folder = uploadSpoolDir(site.config.dir); // anything a crash leaves there is removed at start
  mkdirSync(folder, { recursive: true });
  const path = join(folder, `upload-${crypto.randomUUID()}`);
  const remove = () => rmSync(path, { force: true });
  try {
    for await (const part of readMultipart(limitedBody(request, max + FRAMING_ALLOWANCE, max), boundary)) {
      if (part.name !== "file") continue;
      const sink = Bun.file(path).writer();
      let size = 0;
      for await (const chunk of part.body) {
        size += chunk.length;
        if (size > max) throw tooLarge(max);
        sink.write(chunk);
      }
      await sink.end();
      return { file: Bun.file(path), name: part.filename ?? "upload", remove };
    }
  } catch (e) {
    remove();
    if (e instanceof AppError) throw e;
    throw badRequest(`the multipart body cannot be read: ${(e as Error).message}`);
  }
  remove();
  throw badRequest("the multipart part `file` is missing or not a file");
}

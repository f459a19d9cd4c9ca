/**
 * import-document: a .docx becomes HTML (mammoth), an OpenAI-compatible chat-completions endpoint
 * proposes values for the resource's fields, and the proposal goes through the write rules field by
 * field. Nothing is created: the caller reviews the proposal and POSTs it like any record.
 * Without AI_API_KEY nothing is read or sent.
 */
import mammoth from "mammoth";
import { authorize, type Principal } from "../access/permissions";
import type { FieldDef, ResourceDef } from "../definitions/types";
import { AppError, unauthorized } from "../errors";
import { takeAiCall } from "../access/rate-limit";
import { authorizeAi, chatJson, requireProvider, type Message } from "../ai/provider";
import { checkZipBounds, type ZipBounds } from "./zip-bounds";
import { prepareValues } from "../records/prepare";
import type { Site } from "../site";

export type DocumentProposal = {
  resource: string;
  /** Field values that passed validation, cleaned as a write would store them. */
  proposal: Record<string, unknown>;
  /** Proposed values that failed validation (or name no fillable field), with the reason. */
  rejected: Record<string, string>;
  /** Required fields the proposal does not fill. */
  missing: string[];
  document: { name: string; characters: number; truncated: boolean };
  model: string;
};

/** About 15k tokens of document: enough for an article, bounded for cost. */
const MAX_DOCUMENT_CHARS = 60_000;
/** Types an AI cannot fill from text: uploads, secrets, nested groups. */
const NOT_PROPOSED = new Set(["password", "image", "file", "upload", "gallery", "group"]);

/** The fields a proposal may fill. */
export function proposableFields(def: ResourceDef): [string, FieldDef][] {
  return Object.entries(def.fields).filter(([name, f]) => !def.hidden.has(name) && !NOT_PROPOSED.has(f.type));
}

export async function proposeFromDocument(site: Site, p: Principal, resource: string, upload: () => Promise<{ file: Blob; name: string }>): Promise<DocumentProposal> {
  const def = site.resource(resource);
  // Every call spends the site's AI credits: never for anonymous visitors, whatever forms allow.
  if (p.kind === "anonymous") throw unauthorized("import-document needs a signed-in user or a bearer token");
  authorizeAi(p);
  authorize(p, resource, "create");
  requireProvider(site.config, "import-document");
  const { file, name } = await upload();
  const html = await docxToHtml(file, { maxUncompressed: site.config.documentMaxUnzipped, maxEntries: 1000 });
  await takeAiCall(site, p);
  const truncated = html.length > MAX_DOCUMENT_CHARS;
  const text = truncated ? html.slice(0, MAX_DOCUMENT_CHARS) : html;
  const answer = await chatJson(site.config, messages(def, text));
  const checked = await check(site, def, answer);
  return { resource, ...checked, document: { name, characters: html.length, truncated }, model: site.config.aiModel };
}

async function docxToHtml(file: Blob, bounds: ZipBounds): Promise<string> {
  const bytes = new Uint8Array(await file.arrayBuffer());
  // A .docx is a zip archive: "PK\3\4".
  const isZip = bytes.length > 4 && bytes[0] === 0x50 && bytes[1] === 0x4b && bytes[2] === 0x03 && bytes[3] === 0x04;
  if (!isZip) throw new AppError(415, "UNSUPPORTED_MEDIA_TYPE", "the file is not a .docx document");
  checkZipBounds(bytes, bounds);
  try {
    const r = await mammoth.convertToHtml({ buffer: Buffer.from(bytes) });
    return r.value;
  } catch (e) {
    throw new AppError(415, "UNSUPPORTED_MEDIA_TYPE", `the .docx document cannot be read: ${(e as Error).message}`);
  }
}

/** What each field wants, for the model: type, label, options, languages, and the site's own instructions. */
function fieldGuide(def: ResourceDef): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const [name, f] of proposableFields(def)) {
    const g: Record<string, unknown> = { type: f.type };
    if (f.name) g.label = f.name;
    if (f.required) g.required = true;
    if (f.multi) g.list = true;
    if (f.options) g.options = Object.keys(f.options);
    if (f.i18n) g.languages = def.raw.languages;
    if (f.min !== undefined) g.min = f.min;
    if (f.max !== undefined) g.max = f.max;
    const instruction = def.raw.ai_prompts?.[name];
    if (instruction) g.instructions = instruction;
    out[name] = g;
  }
  return out;
}

function messages(def: ResourceDef, documentHtml: string): Message[] {
  const system = [
    `You fill in a new record of the resource "${def.name}" from a document.`,
    "Answer with one JSON object and nothing else. Its keys are field names from the field guide; leave out fields the document does not give.",
    "Types: text and textarea are plain text, html is simple HTML, number is a JSON number, boolean is true or false, date is YYYY-MM-DD, select is one of its options, slug is lowercase words joined by hyphens.",
    "A field with `list` takes a JSON list; a field with `languages` takes an object keyed by language code. Follow each field's `instructions`.",
  ].join("\n");
  const user = `Field guide:\n${JSON.stringify(fieldGuide(def), null, 1)}\n\nDocument (HTML):\n${documentHtml}`;
  return [{ role: "system", content: system }, { role: "user", content: user }];
}

/** Each proposed value through the write rules on its own, so one bad value does not sink the rest. */
async function check(site: Site, def: ResourceDef, answer: Record<string, unknown>) {
  const fillable = new Set(proposableFields(def).map(([n]) => n));
  const proposal: Record<string, unknown> = {};
  const rejected: Record<string, string> = {};
  const uuid = crypto.randomUUID();
  for (const [name, value] of Object.entries(answer)) {
    if (value === null || value === undefined || value === "") continue;
    if (!fillable.has(name)) {
      rejected[name] = "not a field of the resource that a document can fill";
      continue;
    }
    try {
      const out = await prepareValues(site.store, def, { [name]: value }, "update", uuid, { passwordMinLength: site.config.passwordMinLength });
      proposal[name] = out[name];
    } catch (e) {
      if (!(e instanceof AppError) || e.status !== 422) throw e;
      rejected[name] = e.extra.errors?.[name] ?? e.details ?? "is invalid";
    }
  }
  const missing = Object.entries(def.fields).filter(([n, f]) => f.required && !(n in proposal)).map(([n]) => n);
  return { proposal, rejected, missing };
}

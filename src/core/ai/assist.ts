/**
 * `openai/translate` and `openai/complete`: help for editors filling a form. Only for signed-in
 * users (or token holders) who hold `create-.ai` and may edit the record (create, for a new one),
 * counted against their AI rate. Results are cleaned as the field would store them; nothing is written.
 */
import { authorize, type Principal } from "../access/permissions";
import { takeAiCall } from "../access/rate-limit";
import type { FieldDef, ResourceDef } from "../definitions/types";
import { AppError, badRequest, unauthorized } from "../errors";
import type { Site } from "../site";
import { cleanHtml } from "../validation/html";
import { authorizeAi, chatJson, requireProvider, type Message } from "./provider";

/** Bounds one request's text: a long article, not a book. */
const MAX_TEXT_CHARS = 20_000;

type Target = { def: ResourceDef; name: string; field: FieldDef };

function target(site: Site, p: Principal, body: Record<string, unknown>, what: string): Target {
  if (p.kind !== "user") throw unauthorized(`${what} needs a signed-in user or a bearer token`);
  authorizeAi(p);
  if (typeof body.resource !== "string" || typeof body.field !== "string") throw badRequest("name the `resource` and the `field`");
  const def = site.resource(body.resource);
  const field = def.fields[body.field];
  if (!field || def.hidden.has(body.field)) throw badRequest(`${body.resource} has no field "${body.field}"`);
  if (typeof body.uuid === "string" && body.uuid) authorize(p, def.name, "edit", body.uuid);
  else authorize(p, def.name, "create");
  return { def, name: body.field, field };
}

function text(body: Record<string, unknown>, key: string): string {
  const v = body[key];
  if (typeof v !== "string" || !v.trim()) throw badRequest(`\`${key}\` must be a non-empty text`);
  if (v.length > MAX_TEXT_CHARS) throw badRequest(`\`${key}\` may hold at most ${MAX_TEXT_CHARS} characters`);
  return v;
}

const kindOf = (f: FieldDef) => (f.type === "html" ? "HTML (keep the markup exactly, translate only the text)" : "plain text");
const clean = (t: Target, v: unknown) => (typeof v !== "string" ? "" : t.field.type === "html" ? cleanHtml(v, t.field, t.def.raw.buttons) : v);

export async function translate(site: Site, p: Principal, body: Record<string, unknown>): Promise<{ from: string; translations: Record<string, string> }> {
  const t = target(site, p, body, "translation");
  const languages = t.def.raw.languages ?? [];
  if (!t.field.i18n || languages.length < 2) throw badRequest(`${t.def.name}.${t.name} is not translated into several languages`);
  const from = typeof body.from === "string" ? body.from : languages[0];
  if (!languages.includes(from)) throw badRequest(`\`from\` must be one of ${languages.join(", ")}`);
  const to = Array.isArray(body.to) ? body.to.map(String) : languages.filter((l) => l !== from);
  const unknown = to.filter((l) => !languages.includes(l) || l === from);
  if (unknown.length || !to.length) throw badRequest(`\`to\` must list languages of ${t.def.name} other than ${from}`);
  const source = text(body, "text");
  requireProvider(site.config, "translation");
  await takeAiCall(site, p);
  const guide = t.def.raw.ai_prompts?.[t.name];
  const answer = await askTranslations(site, [
    `You translate the field "${t.name}" of the resource "${t.def.name}". The text is ${kindOf(t.field)}.`,
    guide ? `Instructions for this field: ${guide}` : "",
  ], from, to, source);
  const translations: Record<string, string> = {};
  for (const l of to) translations[l] = clean(t, answer[l]);
  return { from, translations };
}

/** The provider's translations of `source` into each of `to`; 502 when one is missing. */
async function askTranslations(site: Site, about: string[], from: string, to: string[], source: string): Promise<Record<string, string>> {
  const msgs: Message[] = [
    { role: "system", content: [
      about[0],
      `Answer with one JSON object whose keys are exactly these language codes: ${to.join(", ")}; each value is the translation.`,
      ...about.slice(1),
    ].filter(Boolean).join("\n") },
    { role: "user", content: `Language of the text: ${from}\n\n${source}` },
  ];
  const answer = await chatJson(site.config, msgs);
  const missing = to.filter((l) => typeof answer[l] !== "string");
  if (missing.length) throw new AppError(502, "BAD_GATEWAY", `the AI provider gave no translation into ${missing.join(", ")}`);
  return Object.fromEntries(to.map((l) => [l, answer[l] as string]));
}

export async function complete(site: Site, p: Principal, body: Record<string, unknown>): Promise<{ text: string }> {
  const t = target(site, p, body, "completion");
  const prompt = text(body, "prompt");
  const current = typeof body.text === "string" ? body.text.slice(0, MAX_TEXT_CHARS) : "";
  requireProvider(site.config, "completion");
  await takeAiCall(site, p);
  const guide = t.def.raw.ai_prompts?.[t.name];
  const answer = await chatJson(site.config, [
    { role: "system", content: [
      `You write the field "${t.name}" of a record of the resource "${t.def.name}". The value is ${t.field.type === "html" ? "simple HTML" : "plain text"}.`,
      'Answer with one JSON object {"text": "<the new value>"}.',
      guide ? `Instructions for this field: ${guide}` : "",
    ].filter(Boolean).join("\n") },
    { role: "user", content: `${prompt}${current ? `\n\nCurrent value:\n${current}` : ""}` },
  ]);
  if (typeof answer.text !== "string") throw new AppError(502, "BAD_GATEWAY", "the AI provider's answer has no `text`");
  return { text: clean(t, answer.text) };
}

/** Language codes as the tools take them: `en`, `de-CH`. */
const LANGUAGE = /^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$/;

/**
 * A plain text into other languages (the agents' `translate` tool): for signed-in users with
 * `create-.ai`, counted against their AI rate like the editors' translation.
 */
export async function translateText(site: Site, p: Principal, source: string, from: string, to: string[]): Promise<{ from: string; translations: Record<string, string> }> {
  if (p.kind !== "user") throw unauthorized("translation needs a signed-in user or a bearer token");
  authorizeAi(p);
  text({ text: source }, "text");
  const bad = [from, ...to].filter((l) => !LANGUAGE.test(l));
  if (bad.length) throw badRequest(`not language codes: ${bad.join(", ")}`);
  const targets = [...new Set(to)].filter((l) => l !== from);
  if (!targets.length) throw badRequest("`to` must name at least one language other than `from`");
  requireProvider(site.config, "translation");
  await takeAiCall(site, p);
  return { from, translations: await askTranslations(site, ["You translate plain text."], from, targets, source) };
}

/**
 * The OpenAI-compatible chat-completions provider (AI_BASE_URL, AI_API_KEY, AI_MODEL) behind
 * import-document, translation and completion, through the official `openai` client (timeouts,
 * retries with backoff). Answers are asked for as one JSON object.
 */
import OpenAI from "openai";
import { AppError } from "../errors";
import { authorize, can, type Principal } from "../access/permissions";

export type Message = { role: "system" | "user"; content: string };
type ProviderConfig = { aiApiKey: string; aiBaseUrl: string; aiModel: string };

const PROVIDER_TIMEOUT_MS = 60_000;
const PROVIDER_RETRIES = 2;
const providerError = (details: string) => new AppError(502, "BAD_GATEWAY", details);

/**
 * Every provider call spends the site's credits, so it is a permission of its own (`create-.ai`,
 * implied by `manage-.ai` and `(all)`), asked before anything else: holding `create-<resource>` is
 * not enough, since anonymous allows hand that to every signed-in user.
 */
export const AI_FEATURE = ".ai";
export const authorizeAi = (p: Principal) => authorize(p, AI_FEATURE, "create");
export const mayUseAi = (p: Principal) => can(p, AI_FEATURE, "create");

export function requireProvider(config: ProviderConfig, what: string): void {
  if (!config.aiApiKey) throw new AppError(503, "SERVICE_UNAVAILABLE", `${what} needs an AI provider: set AI_API_KEY (and AI_BASE_URL, AI_MODEL) in DIR/.env`);
}

/** One client per provider setting: it keeps its connections. */
const clients = new Map<string, OpenAI>();
export function clientFor(config: ProviderConfig): OpenAI {
  const key = `${config.aiBaseUrl}\u0000${config.aiApiKey}`;
  let client = clients.get(key);
  if (!client) {
    // The SDK retries connection errors, 408, 409, 429 and 5xx with backoff, within the timeout.
    client = new OpenAI({ apiKey: config.aiApiKey, baseURL: config.aiBaseUrl.replace(/\/+$/, ""), timeout: PROVIDER_TIMEOUT_MS, maxRetries: PROVIDER_RETRIES });
    if (clients.size > 16) clients.clear();
    clients.set(key, client);
  }
  return client;
}

/** A provider failure as the caller sees it: the provider's body may echo the key or prompt, so only its status. */
export function providerFailure(e: unknown): AppError {
  if (e instanceof AppError) return e;
  if (e instanceof OpenAI.APIConnectionTimeoutError) return providerError(`the AI provider cannot be reached (no answer within ${PROVIDER_TIMEOUT_MS / 1000} s)`);
  if (e instanceof OpenAI.APIConnectionError) return providerError(`the AI provider cannot be reached (${e.cause instanceof Error ? e.cause.message : "connection failed"})`);
  if (e instanceof OpenAI.APIError && e.status !== undefined) return providerError(`the AI provider answered HTTP ${e.status}`);
  return providerError("the AI provider's answer could not be read");
}

/** One chat-completions call; the answer's content parsed as a JSON object. */
export async function chatJson(config: ProviderConfig, msgs: Message[]): Promise<Record<string, unknown>> {
  let content: unknown;
  try {
    const answer = await clientFor(config).chat.completions.create({ model: config.aiModel, messages: msgs, temperature: 0, response_format: { type: "json_object" } });
    content = answer.choices?.[0]?.message?.content;
  } catch (e) {
    throw providerFailure(e);
  }
  if (typeof content !== "string") throw providerError("the AI provider's answer has no message content");
  const body = content.trim().replace(/^```(?:json)?\s*/i, "").replace(/\s*```$/, "");
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = null;
  }
  if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  throw providerError("the AI provider's answer is not a JSON object");
}

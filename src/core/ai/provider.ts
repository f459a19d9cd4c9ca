/**
 * The OpenAI-compatible chat-completions provider (AI_BASE_URL, AI_API_KEY, AI_MODEL) behind
 * import-document, translation and completion. Answers are asked for as one JSON object.
 */
import { AppError } from "../errors";
import { authorize, can, type Principal } from "../access/permissions";

export type Message = { role: "system" | "user"; content: string };
type ProviderConfig = { aiApiKey: string; aiBaseUrl: string; aiModel: string };

const PROVIDER_TIMEOUT_MS = 60_000;
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

/** One chat-completions call; the answer's content parsed as a JSON object. */
export async function chatJson(config: ProviderConfig, msgs: Message[]): Promise<Record<string, unknown>> {
  let res: Response;
  try {
    res = await fetch(`${config.aiBaseUrl.replace(/\/+$/, "")}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${config.aiApiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: config.aiModel, messages: msgs, temperature: 0, response_format: { type: "json_object" } }),
      signal: AbortSignal.timeout(PROVIDER_TIMEOUT_MS),
    });
  } catch (e) {
    throw providerError(`the AI provider cannot be reached (${(e as Error).name === "TimeoutError" ? "no answer within 60 s" : (e as Error).message})`);
  }
  // The provider's body may echo the key or prompt: only its status reaches the caller.
  if (!res.ok) throw providerError(`the AI provider answered HTTP ${res.status}`);
  let content: unknown;
  try {
    content = ((await res.json()) as { choices?: { message?: { content?: unknown } }[] }).choices?.[0]?.message?.content;
  } catch {
    throw providerError("the AI provider's answer is not JSON");
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

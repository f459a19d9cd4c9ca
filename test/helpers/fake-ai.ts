/**
 * A scripted OpenAI-compatible chat-completions server on 127.0.0.1 for tests (no network): each
 * request takes the next reply of the script — text (streamed in pieces when asked to stream) or
 * tool calls — and every request is kept for the test to look at.
 */
import type { Server } from "bun";

export type ToolCall = { name: string; arguments: Record<string, unknown> | string };
/** One reply: text, tool calls, an HTTP error, or a function of the request that gives one. */
export type Reply =
  | { text: string; pause?: Promise<unknown> }
  | { tools: ToolCall[]; pause?: Promise<unknown> }
  | { status: number }
  | ((request: ChatRequest) => Reply);

export type ChatRequest = {
  model: string;
  stream?: boolean;
  messages: { role: string; content?: string | null; tool_calls?: { id: string; function: { name: string; arguments: string } }[]; tool_call_id?: string }[];
  tools?: { type: "function"; function: { name: string; description?: string; parameters?: unknown } }[];
  [k: string]: unknown;
};

export type FakeAi = {
  /** The base URL to give as AI_BASE_URL. */
  base: string;
  requests: ChatRequest[];
  /** Replies given in turn; when none is left, the answer is 500. */
  script(...replies: Reply[]): void;
  stop(): void;
};

let callIds = 0;
const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: "chatcmpl-fake", object: "chat.completion.chunk", created: 0, model: "fake", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

/** Text in pieces of a few characters, as a provider streams it. */
function streamed(reply: { text: string } | { tools: ToolCall[] }): string[] {
  const parts: string[] = [chunk({ role: "assistant", content: "" })];
  if ("text" in reply) {
    for (let i = 0; i < reply.text.length; i += 4) parts.push(chunk({ content: reply.text.slice(i, i + 4) }));
    parts.push(chunk({}, "stop"));
  } else {
    reply.tools.forEach((t, index) => {
      const args = typeof t.arguments === "string" ? t.arguments : JSON.stringify(t.arguments);
      parts.push(chunk({ tool_calls: [{ index, id: `call_${++callIds}`, type: "function", function: { name: t.name, arguments: "" } }] }));
      // Arguments arrive in pieces too: the client must put them together.
      for (let i = 0; i < args.length; i += 7) parts.push(chunk({ tool_calls: [{ index, function: { arguments: args.slice(i, i + 7) } }] }));
    });
    parts.push(chunk({}, "tool_calls"));
  }
  parts.push("data: [DONE]\n\n");
  return parts;
}

function whole(reply: { text: string } | { tools: ToolCall[] }): Record<string, unknown> {
  const message = "text" in reply
    ? { role: "assistant", content: reply.text }
    : { role: "assistant", content: null, tool_calls: reply.tools.map((t) => ({ id: `call_${++callIds}`, type: "function", function: { name: t.name, arguments: typeof t.arguments === "string" ? t.arguments : JSON.stringify(t.arguments) } })) };
  return { id: "chatcmpl-fake", object: "chat.completion", created: 0, model: "fake", choices: [{ index: 0, message, finish_reason: "text" in reply ? "stop" : "tool_calls" }] };
}

export function fakeAi(): FakeAi {
  const requests: ChatRequest[] = [];
  let replies: Reply[] = [];
  const server: Server<undefined> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      if (new URL(req.url).pathname !== "/v1/chat/completions" || req.method !== "POST") return new Response("not found", { status: 404 });
      const body = (await req.json()) as ChatRequest;
      requests.push(body);
      let reply = replies.shift() ?? { status: 500 };
      while (typeof reply === "function") reply = reply(body);
      if ("status" in reply) return Response.json({ error: { message: "scripted failure" } }, { status: reply.status });
      if (body.stream) {
        const parts = streamed(reply);
        const pause = reply.pause;
        if (!pause) return new Response(parts.join(""), { headers: { "content-type": "text/event-stream" } });
        // `pause`: the first pieces now, the rest once it resolves (a provider in the middle of an answer).
        const enc = new TextEncoder();
        const stream = new ReadableStream<Uint8Array>({
          async start(controller) {
            controller.enqueue(enc.encode(parts.slice(0, 2).join("")));
            await pause;
            controller.enqueue(enc.encode(parts.slice(2).join("")));
            controller.close();
          },
        });
        return new Response(stream, { headers: { "content-type": "text/event-stream" } });
      }
      return Response.json(whole(reply));
    },
  });
  return {
    base: `http://127.0.0.1:${server.port}/v1`,
    requests,
    script: (...r) => void (replies = r),
    stop: () => void server.stop(true),
  };
}

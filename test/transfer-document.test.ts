import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { adminSite } from "./helpers/site";
import { docx } from "./helpers/docx";
import { articles } from "./fixtures/transfer-defs";

type Seen = { auth: string | null; body: any };
/** A fake OpenAI-compatible provider on 127.0.0.1 that answers with `content` and records requests. */
function fakeProvider() {
  const seen: Seen[] = [];
  let reply: { status: number; content: string } = { status: 200, content: "{}" };
  const server: Server<undefined> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      if (new URL(req.url).pathname !== "/v1/chat/completions" || req.method !== "POST") return new Response("no", { status: 404 });
      seen.push({ auth: req.headers.get("authorization"), body: await req.json() });
      if (reply.status !== 200) return new Response(JSON.stringify({ error: { message: "boom AI_SECRET_ECHO" } }), { status: reply.status });
      return Response.json({ id: "x", object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: reply.content } }] });
    },
  });
  return { seen, server, base: `http://127.0.0.1:${server.port}/v1`, answer: (r: typeof reply) => (reply = r) };
}

const provider = fakeProvider();
let withKey: Awaited<ReturnType<typeof adminSite>>;
let noKey: Awaited<ReturnType<typeof adminSite>>;
beforeAll(async () => {
  withKey = await adminSite({
    defs: { articles },
    files: { ".env": `AI_API_KEY=test-key-123\nAI_BASE_URL=${provider.base}\nAI_MODEL=fake-model\n` },
    env: { AI_API_KEY: "", AI_BASE_URL: "", AI_MODEL: "" },
  });
  noKey = await adminSite({ defs: { articles }, env: { AI_API_KEY: "", AI_BASE_URL: provider.base } });
});
afterAll(async () => {
  await withKey.cleanup();
  await noKey.cleanup();
  provider.server.stop(true);
});

async function send(site: typeof withKey, bytes: Uint8Array | string, name = "report.docx") {
  const form = new FormData();
  form.append("file", new Blob([bytes]), name);
  const res = await fetch(`${site.base}/api/v1/articles/import-document`, { method: "POST", headers: { authorization: `Bearer ${site.token}` }, body: form });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

describe("import-document", () => {
  test("reads the .docx, asks the provider, returns the proposal cleaned like a write, creates nothing", async () => {
    provider.answer({
      status: 200,
      content: "```json\n" + JSON.stringify({
        title: "Quarterly report",
        body: "<p>Revenue grew.</p><script>alert(1)</script>",
        summary: "Short [#danger#] summary.",
        year: "twenty",
        tags: ["finance", "q3"],
        label: { en: "Report", de: "Bericht" },
        published: true,
        secret: "should not be taken",
        nonsense: 1,
      }) + "\n```",
    });
    const before = provider.seen.length;
    const r = await send(withKey, await docx(["Quarterly report", "Revenue grew by 12 percent."]));
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ code: 200, success: true, status: "ok", resource: "articles", model: "fake-model" });
    expect(r.body.proposal).toEqual({
      title: "Quarterly report",
      body: "<p>Revenue grew.</p>",
      summary: "Short &#91;#danger#&#93; summary.",
      tags: ["finance", "q3"],
      label: { en: "Report", de: "Bericht" },
      published: true,
    });
    expect(Object.keys(r.body.rejected).sort()).toEqual(["nonsense", "secret", "year"]);
    expect(r.body.rejected.year).toBe("must be a number");
    expect(r.body.missing).toEqual([]);
    expect(r.body.document).toMatchObject({ name: "report.docx", truncated: false });

    expect(provider.seen.length).toBe(before + 1);
    const call = provider.seen.at(-1)!;
    expect(call.auth).toBe("Bearer test-key-123");
    expect(call.body.model).toBe("fake-model");
    const prompt = call.body.messages.map((m: any) => m.content).join("\n");
    expect(prompt).toContain("Revenue grew by 12 percent.");
    expect(prompt).toContain("Two sentences at most."); // the resource's ai_prompts
    expect(prompt).not.toContain("\"secret\""); // hidden fields are not offered
    expect(prompt).not.toContain("\"pin\"");

    const list = await withKey.apiJson("GET", "/api/v1/articles");
    expect(list.body!.count).toBe(0);
  });

  test("required fields the proposal leaves out are listed in missing", async () => {
    provider.answer({ status: 200, content: JSON.stringify({ summary: "Only a summary" }) });
    const r = await send(withKey, await docx(["Untitled"]));
    expect(r.status).toBe(200);
    expect(r.body.proposal).toEqual({ summary: "Only a summary" });
    expect(r.body.missing).toEqual(["title"]);
  });

  test("provider failures are 502 and do not leak the provider's body", async () => {
    provider.answer({ status: 500, content: "" });
    const r = await send(withKey, await docx(["x"]));
    expect(r.status).toBe(502);
    expect(r.body.message).toBe("BAD_GATEWAY");
    expect(JSON.stringify(r.body)).not.toContain("AI_SECRET_ECHO");
    provider.answer({ status: 200, content: "I cannot help with that." });
    expect((await send(withKey, await docx(["x"]))).status).toBe(502);
  });

  test("not a .docx: 415, nothing sent", async () => {
    const before = provider.seen.length;
    const r = await send(withKey, "just text", "notes.txt");
    expect(r.status).toBe(415);
    expect(provider.seen.length).toBe(before);
  });

  test("without AI_API_KEY: 503 SERVICE_UNAVAILABLE and nothing sent", async () => {
    const before = provider.seen.length;
    const r = await send(noKey, await docx(["Secret plans"]));
    expect(r.status).toBe(503);
    expect(r.body).toMatchObject({ code: 503, success: false, message: "SERVICE_UNAVAILABLE" });
    expect(r.body.details).toContain("AI_API_KEY");
    expect(provider.seen.length).toBe(before);
  });

  test("needs a signed-in caller with create-<resource>", async () => {
    // Anonymous visitors never spend the site's AI credits (401), and a caller without create- gets 403.
    const res = await fetch(`${withKey.base}/api/v1/articles/import-document`, { method: "POST", body: new FormData() });
    expect(res.status).toBe(401);
    const role = await withKey.apiJson("POST", "/api/v1/roles", { name: "viewer", permissions: ["view-articles"] });
    expect(role.status).toBe(201);
    const u = await withKey.apiJson("POST", "/api/v1/users", { email: "viewer@example.com", password: "viewer-password", role: "viewer", api: true });
    expect(u.status).toBe(201);
    const t = await fetch(`${withKey.base}/api/v1/auth/token`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "viewer@example.com", password: "viewer-password" }) });
    const token = ((await t.json()) as { token: string }).token;
    const denied = await fetch(`${withKey.base}/api/v1/articles/import-document`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: new FormData() });
    expect(denied.status).toBe(403);
  });
});

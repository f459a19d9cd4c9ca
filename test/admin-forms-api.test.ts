/**
 * The internal endpoints behind the forms, through the real server: `.files-usage`, `.files-unused`,
 * `openai/translate` and `openai/complete` (against a fake provider on 127.0.0.1).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { adminSite } from "./helpers/site";
import { addUser, call, tokenFor } from "./helpers/access";

const posts = {
  languages: ["en", "de", "fr"],
  ai_prompts: { body: "Formal register." },
  fields: {
    title: { type: "text", i18n: true },
    plain: { type: "text" },
    body: { type: "html", i18n: true, buttons: "bold,anchor" },
    cover: { type: "image" },
    sections: { type: "group", fields: { pic: { type: "image" } } },
    secret: { type: "text" },
  },
  hidden: "secret",
};
const other = { fields: { photo: { type: "image" } } };

let reply: (system: string, user: string) => unknown = () => ({});
const seen: string[] = [];
const provider: Server<undefined> = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    const body = (await req.json()) as { messages: { role: string; content: string }[] };
    const system = body.messages[0].content;
    const user = body.messages[1].content;
    seen.push(system);
    return Response.json({ choices: [{ message: { content: JSON.stringify(reply(system, user)) } }] });
  },
});

let s: Awaited<ReturnType<typeof adminSite>>;
let viewer: string;
let md5: string;
let unusedMd5: string;
beforeAll(async () => {
  s = await adminSite({
    defs: { posts, other },
    files: { ".env": `AI_API_KEY=k\nAI_BASE_URL=http://127.0.0.1:${provider.port}/v1\nAI_MODEL=m\nRESD_AI_RATE=5\n` },
    env: { AI_API_KEY: "", AI_BASE_URL: "", AI_MODEL: "", RESD_AI_RATE: "" },
  });
  const up = async (text: string) => {
    const form = new FormData();
    form.append("file", new Blob([text], { type: "text/plain" }), "f.txt");
    const r = await fetch(`${s.base}/api/v1/.files`, { method: "POST", headers: { authorization: `Bearer ${s.token}` }, body: form });
    return Object.keys(((await r.json()) as { files: Record<string, unknown> }).files)[0];
  };
  md5 = await up("used file");
  unusedMd5 = await up("unused file");
  await s.apiJson("POST", "/api/v1/roles", { name: "post-viewer", permissions: ["view-posts", "view-.files"] });
  await addUser(s.dir, "v@example.com", "viewer-password", { role: "post-viewer", api: true });
  viewer = await tokenFor(s.base, "v@example.com", "viewer-password");
});
afterAll(async () => {
  await s.cleanup();
  provider.stop(true);
});

describe(".files-usage and .files-unused", () => {
  test("a file named by a media field, inside a group or in html is found there; other files are unused", async () => {
    const a = Object.keys((await s.apiJson("POST", "/api/v1/posts", { cover: md5 })).body!.posts)[0];
    const b = Object.keys((await s.apiJson("POST", "/api/v1/posts", { sections: [{ pic: md5 }] })).body!.posts)[0];
    const c = Object.keys((await s.apiJson("POST", "/api/v1/posts", { body: { en: `<p>see <a href="/download/${md5}">it</a></p>` } })).body!.posts)[0];
    await s.apiJson("POST", "/api/v1/posts", { plain: `mentions ${md5.slice(0, 31)}` });
    const o = Object.keys((await s.apiJson("POST", "/api/v1/other", { photo: md5 })).body!.other)[0];
    const r = await s.apiJson("GET", `/api/v1/.files-usage?uuid=${md5}`);
    expect(r.status).toBe(200);
    const usage = r.body!.usage as { resource: string; uuid: string; fields: string[] }[];
    expect(usage.sort((x, y) => x.uuid.localeCompare(y.uuid))).toEqual([
      { resource: "other", uuid: o, fields: ["photo"] },
      { resource: "posts", uuid: a, fields: ["cover"] },
      { resource: "posts", uuid: b, fields: ["sections"] },
      { resource: "posts", uuid: c, fields: ["body"] },
    ].sort((x, y) => x.uuid.localeCompare(y.uuid)));
    // A caller sees only the resources it may view.
    const v = await call(s.base, "GET", `/api/v1/.files-usage?uuid=${md5}`, { token: viewer });
    expect(((v.body as any).usage as { resource: string }[]).every((u) => u.resource === "posts")).toBe(true);
    const unused = await s.apiJson("GET", "/api/v1/.files-unused");
    expect(Object.keys(unused.body!.files)).toEqual([unusedMd5]);
    expect(unused.body!.files[unusedMd5].size).toBe("unused file".length);
  });

  test("errors: unknown or malformed file 404; no view-.files 403; anonymous 403; other methods 405", async () => {
    expect((await s.apiJson("GET", "/api/v1/.files-usage?uuid=nope")).status).toBe(404);
    expect((await s.apiJson("GET", `/api/v1/.files-usage?uuid=${"0".repeat(32)}`)).status).toBe(404);
    await s.apiJson("POST", "/api/v1/roles", { name: "no-files", permissions: ["view-posts"] });
    await addUser(s.dir, "nf@example.com", "nofiles-password", { role: "no-files", api: true });
    const nf = await tokenFor(s.base, "nf@example.com", "nofiles-password");
    expect((await call(s.base, "GET", `/api/v1/.files-usage?uuid=${md5}`, { token: nf })).status).toBe(403);
    expect((await call(s.base, "GET", "/api/v1/.files-unused", { token: nf })).status).toBe(403);
    expect((await call(s.base, "GET", "/api/v1/.files-unused")).status).toBe(403);
    expect((await s.apiJson("POST", "/api/v1/.files-unused", {})).status).toBe(405);
  });
});

describe("openai/translate and openai/complete", () => {
  test("translates into the resource's other languages with the field's instructions; html is cleaned", async () => {
    reply = (system, user) => Object.fromEntries((/language codes: ([a-z, ]+);/.exec(system)?.[1].split(", ") ?? []).map((l) => [l, `<p><strong>${l}</strong><script>x</script> ${user.split("\n\n")[1].replace(/<\/?p>/g, "")}</p>`]));
    const r = await s.apiJson("POST", "/api/v1/openai/translate", { resource: "posts", field: "body", from: "en", text: "<p>Hello</p>" });
    expect(r.status).toBe(200);
    expect(r.body!.translations).toEqual({ de: "<p><strong>de</strong> Hello</p>", fr: "<p><strong>fr</strong> Hello</p>" });
    expect(seen.at(-1)).toContain("Formal register.");
    expect(seen.at(-1)).toContain("de, fr");
    const one = await s.apiJson("POST", "/api/v1/openai/translate", { resource: "posts", field: "title", from: "de", to: ["en"], text: "Hallo" });
    expect(one.status).toBe(200);
    expect(Object.keys(one.body!.translations)).toEqual(["en"]);
  });

  test("a provider that leaves out a language is a 502, not an empty translation", async () => {
    reply = () => ({ de: "nur deutsch" });
    const r = await s.apiJson("POST", "/api/v1/openai/translate", { resource: "posts", field: "title", text: "Hello" });
    expect(r.status).toBe(502);
    expect(r.body!.details).toContain("fr");
  });

  test("complete answers the field's new value", async () => {
    reply = () => ({ text: "A generated title" });
    const r = await s.apiJson("POST", "/api/v1/openai/complete", { resource: "posts", field: "plain", prompt: "Write a title" });
    expect(r.status).toBe(200);
    expect(r.body!.text).toBe("A generated title");
  });

  test("refused: bad input 400, untranslated field 400, hidden field 400, no edit right 403, anonymous 401, GET 405", async () => {
    expect((await s.apiJson("POST", "/api/v1/openai/translate", { resource: "posts" })).status).toBe(400);
    expect((await s.apiJson("POST", "/api/v1/openai/translate", { resource: "posts", field: "plain", text: "x" })).status).toBe(400);
    expect((await s.apiJson("POST", "/api/v1/openai/translate", { resource: "posts", field: "secret", text: "x" })).status).toBe(400);
    expect((await s.apiJson("POST", "/api/v1/openai/translate", { resource: "posts", field: "title", text: "x", from: "xx" })).status).toBe(400);
    expect((await s.apiJson("POST", "/api/v1/openai/translate", { resource: "posts", field: "title", text: "x".repeat(20_001) })).status).toBe(400);
    expect((await s.apiJson("POST", "/api/v1/openai/translate", { resource: "nope", field: "title", text: "x" })).status).toBe(404);
    expect((await call(s.base, "POST", "/api/v1/openai/translate", { token: viewer, body: { resource: "posts", field: "title", text: "x" } })).status).toBe(403);
    expect((await call(s.base, "POST", "/api/v1/openai/complete", { body: { resource: "posts", field: "plain", prompt: "x" } })).status).toBe(401);
    expect((await s.apiJson("GET", "/api/v1/openai/complete")).status).toBe(405);
  });

  test("AI calls count against the user's rate (RESD_AI_RATE): 429 beyond it", async () => {
    reply = () => ({ text: "t" });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await s.apiJson("POST", "/api/v1/openai/complete", { resource: "posts", field: "plain", prompt: "p" })).status);
    expect(statuses).toContain(429);
    expect(statuses.filter((x) => x === 200).length).toBeLessThanOrEqual(5);
  });
});

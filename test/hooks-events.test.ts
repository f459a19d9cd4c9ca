/** Named lifecycle events through the real server: payloads, order, and a failing handler. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { adminSite } from "./helpers/site";

const EXT = readFileSync(join(import.meta.dir, "fixtures/ext-basic/hooks.ts"), "utf8");
const articles = {
  fields: { title: { type: "text", required: true }, secret: { type: "text" } },
  hidden: "secret",
  events: { create: ["explode", "article-saved"], update: ["article-saved"], delete: ["article-removed"] },
};

type Line = Record<string, any>;
const readLog = (dir: string): Line[] =>
  existsSync(join(dir, "hooks.log")) ? readFileSync(join(dir, "hooks.log"), "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l)) : [];

async function waitFor(dir: string, pred: (lines: Line[]) => boolean, ms = 5000): Promise<Line[]> {
  const end = Date.now() + ms;
  for (;;) {
    const lines = readLog(dir);
    if (pred(lines)) return lines;
    if (Date.now() > end) throw new Error(`timed out; log: ${JSON.stringify(lines)}`);
    await Bun.sleep(20);
  }
}

let s: Awaited<ReturnType<typeof adminSite>>;
beforeAll(async () => {
  s = await adminSite({ defs: { articles }, files: { "ext/hooks.ts": EXT } });
});
afterAll(() => s.cleanup());

describe("named events", () => {
  let uuid = "";
  let adminUuid = "";

  test("create delivers the record without hidden fields, no previous, and the user", async () => {
    const r = await s.apiJson("POST", "/api/v1/articles", { title: "First", secret: "s3cret-long-1" });
    expect(r.status).toBe(201);
    uuid = Object.keys(r.body!.articles)[0];
    adminUuid = r.body!.articles[uuid]._created_by;
    const lines = await waitFor(s.dir, (l) => l.some((x) => x.uuid === uuid && x.action === "create"));
    const e = lines.find((x) => x.uuid === uuid && x.action === "create")!;
    expect(e).toMatchObject({ kind: "event", event: "article-saved", resource: "articles", action: "create", uuid, previous: null, user: adminUuid });
    expect(e.record).toMatchObject({ uuid, title: "First" });
    expect(e.record.secret).toBeUndefined();
    expect(typeof e.record._modified).toBe("number");
  });

  test("the throwing handler listed first changed nothing: write answered 201, record stored, next handler ran, error logged", async () => {
    const r = await s.apiJson("GET", `/api/v1/articles/${uuid}`);
    expect(r.status).toBe(200);
    expect(r.body!.articles[uuid].title).toBe("First");
    expect(s.output()).toContain('event "explode" handler of');
    expect(s.output()).toContain("this handler always fails");
  });

  test("update delivers the new record and the previous one", async () => {
    const r = await s.apiJson("PUT", `/api/v1/articles/${uuid}`, { title: "Second" });
    expect(r.status).toBe(200);
    const lines = await waitFor(s.dir, (l) => l.some((x) => x.action === "update"));
    const e = lines.find((x) => x.action === "update")!;
    expect(e).toMatchObject({ event: "article-saved", uuid, user: adminUuid });
    expect(e.record.title).toBe("Second");
    expect(e.previous.title).toBe("First");
    expect(e.previous.secret).toBeUndefined();
  });

  test("delete delivers the record as it was", async () => {
    const r = await s.apiJson("DELETE", `/api/v1/articles/${uuid}`);
    expect(r.status).toBe(200);
    const lines = await waitFor(s.dir, (l) => l.some((x) => x.action === "delete"));
    const e = lines.find((x) => x.action === "delete")!;
    expect(e).toMatchObject({ event: "article-removed", uuid });
    expect(e.record.title).toBe("Second");
  });

  test("a rejected write (422) delivers nothing", async () => {
    const before = readLog(s.dir).length;
    const r = await s.apiJson("POST", "/api/v1/articles", { secret: "no title" });
    expect(r.status).toBe(422);
    // A later valid write's event arrives; nothing came for the rejected one in between.
    const ok = await s.apiJson("POST", "/api/v1/articles", { title: "Marker" });
    const marker = Object.keys(ok.body!.articles)[0];
    const lines = await waitFor(s.dir, (l) => l.some((x) => x.uuid === marker));
    expect(lines.length).toBe(before + 1);
  });
});

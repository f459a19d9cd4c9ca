/**
 * Black-box: alt text of the media library's files (issue 33, defect 7) over HTTP — set on upload
 * or with PUT, returned by the .files API, validated as titles are plus a length bound; a site made
 * before alt text existed keeps listing its files and takes alt text; a backup keeps it. Runs on
 * both stores (the older site is made with psql on PostgreSQL).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { adminSite, cli, onPostgres, serve, siteEnv, type Server } from "./helpers/site";

type S = Awaited<ReturnType<typeof adminSite>>;
const md5 = (b: Uint8Array) => new Bun.CryptoHasher("md5").update(b).digest("hex");
const bytes = (s: string) => new TextEncoder().encode(s);

let s: S;
/** The server in use: the first one, or the one started again after the site was made older. */
let server: Server;

async function call(method: string, path: string, body?: unknown, raw?: string) {
  const res = await fetch(server.base + path, {
    method,
    headers: { authorization: `Bearer ${s.token}`, ...(body !== undefined || raw !== undefined ? { "content-type": "application/json" } : {}) },
    body: raw ?? (body === undefined ? undefined : JSON.stringify(body)),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

async function upload(content: Uint8Array, name: string, parts: Record<string, string> = {}) {
  const fd = new FormData();
  for (const [k, v] of Object.entries(parts)) fd.append(k, v);
  fd.append("file", new Blob([new Uint8Array(content)], { type: "text/plain" }), name);
  const res = await fetch(`${server.base}/api/v1/.files`, { method: "POST", body: fd, headers: { authorization: `Bearer ${s.token}` } });
  const body = (await res.json()) as Record<string, any>;
  return { status: res.status, body, meta: body.files ? (Object.values(body.files)[0] as Record<string, any>) : null };
}

/** A statement on the site's own database, whichever store holds it. */
function sql(statement: string): void {
  const url = siteEnv(s.dir).RESD_DATABASE_URL;
  if (url) {
    const r = Bun.spawnSync(["psql", url, "-qXc", statement], { stderr: "pipe" });
    if (r.exitCode !== 0) throw new Error(`psql: ${r.stderr.toString()}`);
    return;
  }
  const db = new Database(join(s.dir, "data/resd.db"));
  db.run(statement);
  db.close();
}

beforeAll(async () => {
  s = await adminSite();
  server = s;
});
afterAll(async () => {
  if (server !== s) await server.stop();
  await s.cleanup();
});

describe("alt text of files", () => {
  test("an upload has alt text \"\" unless an `alt` part gives it", async () => {
    const plain = await upload(bytes("no alt"), "plain.txt");
    expect(plain.status).toBe(201);
    expect(plain.meta).toMatchObject({ title: "", alt: "" });
    const given = await upload(bytes("with alt"), "given.txt", { title: "Given", alt: "A page of text" });
    expect(given.status).toBe(201);
    expect(given.meta).toMatchObject({ title: "Given", alt: "A page of text" });
  });

  test("PUT sets alt text; GET of one and of the list return it", async () => {
    const uuid = md5(bytes("no alt"));
    const put = await call("PUT", `/api/v1/.files/${uuid}`, { alt: "Nothing but words" });
    expect(put.status).toBe(200);
    expect(put.body.files[uuid]).toMatchObject({ alt: "Nothing but words", title: "", name: "plain.txt" });
    expect((await call("GET", `/api/v1/.files/${uuid}`)).body.files[uuid].alt).toBe("Nothing but words");
    expect((await call("GET", "/api/v1/.files?limit=10")).body.files[uuid].alt).toBe("Nothing but words");
    // Title and alt text together; PATCH too.
    const both = await call("PATCH", `/api/v1/.files/${uuid}`, { title: "Plain", alt: "Words" });
    expect(both.body.files[uuid]).toMatchObject({ title: "Plain", alt: "Words" });
  });

  test("alt text is checked: length, one line, valid Unicode, no NUL, text", async () => {
    const uuid = md5(bytes("no alt"));
    const bad = async (body: unknown, raw?: string) => {
      const r = await call("PUT", `/api/v1/.files/${uuid}`, body, raw);
      expect(r.status).toBe(422);
      expect(r.body.message).toBe("INVALID_DATA");
      return r.body.errors.alt as string;
    };
    expect(await bad({ alt: "x".repeat(1001) })).toBe("must be at most 1000 characters");
    // Characters, not bytes or UTF-16 units: 1000 emoji are 4000 bytes and still fit.
    expect((await call("PUT", `/api/v1/.files/${uuid}`, { alt: "\u{1F600}".repeat(1000) })).status).toBe(200);
    expect(await bad({ alt: "two\nlines" })).toBe("must be a single line");
    expect(await bad(undefined, '{"alt":"lone \\ud800 surrogate"}')).toContain("unpaired UTF-16 surrogate");
    expect(await bad({ alt: "nul \u0000 inside" })).toContain("NUL");
    expect(await bad({ alt: { en: "an object" } })).toBe("must be text");
    // Still only these fields are editable.
    const other = await call("PUT", `/api/v1/.files/${uuid}`, { alt: "fine", size: 3 });
    expect(other.status).toBe(422);
    expect(other.body.errors.size).toBe("cannot be changed; editable: title, alt, name");
    // An upload's alt part is held to the same rules; nothing is stored.
    const long = await upload(bytes("too long an alt"), "long.txt", { alt: "y".repeat(1001) });
    expect(long.status).toBe(422);
    expect(long.body.errors.alt).toBe("must be at most 1000 characters");
    expect((await call("GET", `/api/v1/.files/${md5(bytes("too long an alt"))}`)).status).toBe(404);
    expect((await call("GET", `/api/v1/.files/${uuid}`)).body.files[uuid].alt).toBe("\u{1F600}".repeat(1000));
  });

  test("a site made before alt text: its files are listed, without alt until one is set", async () => {
    const old = bytes("uploaded before alt text");
    const uuid = md5(old);
    expect((await upload(old, "old.txt", { title: "Old" })).status).toBe(201);
    // Stopped, the record is made as an older resd wrote it and the definition's digest an older one.
    await s.stop();
    sql(`UPDATE "r:.files_meta" SET data = ${onPostgres ? "(data::jsonb - 'alt')::json" : "json_remove(data, '$.alt')"} WHERE uuid = '${uuid}'`);
    sql("UPDATE _resd_schema SET hash = 'before-alt' WHERE resource = '.files_meta'");
    // PostgreSQL also keeps every version a resource had (an instance knows it is older by them).
    if (onPostgres) sql("UPDATE _resd_schema_versions SET hash = 'before-alt' WHERE resource = '.files_meta'");
    server = await serve(s.dir);
    const list = await call("GET", "/api/v1/.files?limit=50&sort=name|text|asc");
    expect(list.status).toBe(200);
    expect(list.body.files[uuid]).toMatchObject({ name: "old.txt", title: "Old" });
    expect("alt" in list.body.files[uuid]).toBe(false);
    const put = await call("PUT", `/api/v1/.files/${uuid}`, { alt: "Set at last" });
    expect(put.status).toBe(200);
    expect(put.body.files[uuid]).toMatchObject({ name: "old.txt", title: "Old", alt: "Set at last" });
    expect((await call("GET", "/api/v1/.files?limit=50")).body.files[uuid].alt).toBe("Set at last");
    // The new field is a new schema version of .files_meta, not a refusal.
    expect(server.errors()).not.toContain("not served");
  });

  test("a backup and its restore keep alt text (on PostgreSQL `resd backup` refuses and names pg_dump, which keeps the alt text with the database)", async () => {
    const tmp = mkdtempSync(join(tmpdir(), "resd-alt-"));
    try {
      const archive = join(tmp, "site.tar");
      const b = await cli(s.dir, ["backup", "--out", archive]);
      if (onPostgres) {
        expect(b.code).toBe(2);
        expect(b.stderr).toContain("pg_dump");
        return;
      }
      expect(b.code).toBe(0);
      const restored = join(tmp, "restored");
      mkdirSync(restored);
      const r = await cli(restored, ["restore", archive]);
      expect(r.code).toBe(0);
      const db = new Database(join(restored, "data/resd.db"), { readonly: true });
      const row = db.query(`SELECT data FROM "r:.files_meta" WHERE uuid = ?`).get(md5(bytes("uploaded before alt text"))) as { data: string };
      db.close();
      expect(JSON.parse(row.data).alt).toBe("Set at last");
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});

test("the OpenAPI document describes alt text where it is read and written", async () => {
  const doc = (await call("GET", "/api/v1/openapi.json")).body;
  expect(doc.components.schemas.FileMeta.properties.alt.type).toBe("string");
  const put = doc.paths["/api/v1/.files/{uuid}"].put.requestBody.content["application/json"].schema;
  expect(put.properties.alt.maxLength).toBe(1000);
  const post = doc.paths["/api/v1/.files"].post.requestBody.content["multipart/form-data"].schema;
  expect(Object.keys(post.properties)).toEqual(["file", "title", "alt"]);
});

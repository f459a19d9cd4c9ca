/**
 * Conditional writes (issue 35, "stale write"): If-Match and If-Unmodified-Since on PUT, PATCH and
 * DELETE of one record answer 412 PRECONDITION_FAILED and write nothing when the record changed;
 * the check is made on the row the write's transaction read, so of two racing writes naming the
 * same version exactly one wins.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { adminSite } from "./helpers/site";

const notes = { fields: { title: { type: "text", required: true }, n: { type: "number" } } };
const settings = { upsert: true, history: false, fields: { value: { type: "text" } } };

let s: Awaited<ReturnType<typeof adminSite>>;
beforeAll(async () => { s = await adminSite({ defs: { notes, settings } }); });
afterAll(async () => { await s.cleanup(); });

type Rec = { uuid: string; title: string; n?: number; _modified: number; _modified_by: string };

async function make(title: string): Promise<Rec> {
  const r = await s.apiJson("POST", "/api/v1/notes", { title });
  expect(r.status).toBe(201);
  return Object.values(r.body!.notes)[0] as Rec;
}

async function read(uuid: string): Promise<{ status: number; etag: string | null; rec: Rec | undefined }> {
  const r = await s.apiJson("GET", `/api/v1/notes/${uuid}`);
  return { status: r.status, etag: r.headers.get("etag"), rec: r.body?.notes?.[uuid] };
}

const httpDate = (sec: number) => new Date(sec * 1000).toUTCString();

describe("If-Match", () => {
  test("PUT with the current tag writes and answers the new version's etag and last-modified; chained writes go on", async () => {
    const rec = await make("first");
    const { etag } = await read(rec.uuid);
    expect(etag).toMatch(/^W\/"[0-9a-f]+"$/);
    const put = await s.apiJson("PUT", `/api/v1/notes/${rec.uuid}`, { title: "second" }, { "if-match": etag! });
    expect(put.status).toBe(200);
    expect(put.body!.notes[rec.uuid].title).toBe("second");
    const next = put.headers.get("etag");
    expect(next).toMatch(/^W\/"[0-9a-f]+"$/);
    expect(next).not.toBe(etag);
    expect(Date.parse(put.headers.get("last-modified")!)).toBeGreaterThan(0);
    // The tag a write answers is the one a read then gives, and it takes the next write.
    expect((await read(rec.uuid)).etag).toBe(next);
    const again = await s.apiJson("PUT", `/api/v1/notes/${rec.uuid}`, { title: "third" }, { "if-match": next! });
    expect(again.status).toBe(200);
    expect((await read(rec.uuid)).rec!.title).toBe("third");
  });

  test("PUT with a stale tag: 412 PRECONDITION_FAILED naming the current version, and nothing written", async () => {
    const rec = await make("original");
    const stale = (await read(rec.uuid)).etag!;
    expect((await s.apiJson("PUT", `/api/v1/notes/${rec.uuid}`, { title: "by someone else" })).status).toBe(200);
    const now = await read(rec.uuid);
    const r = await s.apiJson("PUT", `/api/v1/notes/${rec.uuid}`, { title: "lost update" }, { "if-match": stale });
    expect(r.status).toBe(412);
    expect(r.body).toMatchObject({ code: 412, success: false, status: "error", message: "PRECONDITION_FAILED" });
    expect(r.body!.details).toContain("changed");
    expect(r.body!.request_id).toBeString();
    expect(r.body!._modified).toBe(now.rec!._modified);
    expect(r.body!._modified_by).toBe(rec._modified_by);
    expect(r.headers.get("etag")).toBe(now.etag);
    expect(r.headers.get("cache-control")).toBe("no-store");
    const after = await read(rec.uuid);
    expect(after.rec!.title).toBe("by someone else");
    expect(after.etag).toBe(now.etag);
  });

  test("PATCH honours it the same way", async () => {
    const rec = await make("patch me");
    const first = (await read(rec.uuid)).etag!;
    const ok = await s.apiJson("PATCH", `/api/v1/notes/${rec.uuid}`, { n: 1 }, { "if-match": first });
    expect(ok.status).toBe(200);
    const stale = await s.apiJson("PATCH", `/api/v1/notes/${rec.uuid}`, { n: 2 }, { "if-match": first });
    expect(stale.status).toBe(412);
    expect(stale.body!.message).toBe("PRECONDITION_FAILED");
    expect(stale.headers.get("etag")).toBe(ok.headers.get("etag"));
    expect((await read(rec.uuid)).rec!.n).toBe(1);
  });

  test("a list of tags, the tag without W/, and * all match; a tag of another record does not", async () => {
    const rec = await make("forms");
    const other = await make("other");
    const otherTag = (await read(other.uuid)).etag!;
    let tag = (await read(rec.uuid)).etag!;
    const put = async (ifMatch: string, n: number) => s.apiJson("PATCH", `/api/v1/notes/${rec.uuid}`, { n }, { "if-match": ifMatch });
    let r = await put(`"nope", ${tag}`, 1);
    expect(r.status).toBe(200);
    tag = r.headers.get("etag")!;
    r = await put(tag.replace(/^W\//, ""), 2);
    expect(r.status).toBe(200);
    r = await put("*", 3);
    expect(r.status).toBe(200);
    expect((await put(otherTag, 4)).status).toBe(412);
    expect((await put("garbage", 5)).status).toBe(412);
    expect((await read(rec.uuid)).rec!.n).toBe(3);
  });

  test("a stale tag with an invalid body is 412, not 422: preconditions come before the content", async () => {
    const rec = await make("checked first");
    const stale = (await read(rec.uuid)).etag!;
    expect((await s.apiJson("PATCH", `/api/v1/notes/${rec.uuid}`, { n: 7 })).status).toBe(200);
    const r = await s.apiJson("PUT", `/api/v1/notes/${rec.uuid}`, { n: "not a number" }, { "if-match": stale });
    expect(r.status).toBe(412);
  });

  test("DELETE with a stale tag: 412 and the record stays; with the current tag it goes", async () => {
    const rec = await make("keep me");
    const stale = (await read(rec.uuid)).etag!;
    expect((await s.apiJson("PATCH", `/api/v1/notes/${rec.uuid}`, { n: 9 })).status).toBe(200);
    const r = await s.apiJson("DELETE", `/api/v1/notes/${rec.uuid}`, undefined, { "if-match": stale });
    expect(r.status).toBe(412);
    expect(r.body!.message).toBe("PRECONDITION_FAILED");
    const still = await read(rec.uuid);
    expect(still.status).toBe(200);
    expect(still.rec!.n).toBe(9);
    expect(r.headers.get("etag")).toBe(still.etag);
    const del = await s.apiJson("DELETE", `/api/v1/notes/${rec.uuid}`, undefined, { "if-match": still.etag! });
    expect(del.status).toBe(200);
    expect((await read(rec.uuid)).status).toBe(404);
  });
});

describe("If-Unmodified-Since", () => {
  test("a date before the last change: 412; the change's own second or later: written", async () => {
    const rec = await make("dated");
    const m = rec._modified;
    const before = await s.apiJson("PUT", `/api/v1/notes/${rec.uuid}`, { title: "too late" }, { "if-unmodified-since": httpDate(m - 1) });
    expect(before.status).toBe(412);
    expect(before.body!.message).toBe("PRECONDITION_FAILED");
    expect(before.body!._modified).toBe(m);
    expect((await read(rec.uuid)).rec!.title).toBe("dated");
    const equal = await s.apiJson("PUT", `/api/v1/notes/${rec.uuid}`, { title: "in time" }, { "if-unmodified-since": httpDate(m) });
    expect(equal.status).toBe(200);
    const m2 = equal.body!.notes[rec.uuid]._modified as number;
    const later = await s.apiJson("PATCH", `/api/v1/notes/${rec.uuid}`, { n: 1 }, { "if-unmodified-since": httpDate(m2 + 60) });
    expect(later.status).toBe(200);
    const del = await s.apiJson("DELETE", `/api/v1/notes/${rec.uuid}`, undefined, { "if-unmodified-since": httpDate(m - 3600) });
    expect(del.status).toBe(412);
    expect((await read(rec.uuid)).status).toBe(200);
  });

  test("a value that is not an HTTP date is ignored", async () => {
    const rec = await make("undated");
    for (const v of ["yesterday", "1", "2001-01-01"]) {
      const r = await s.apiJson("PATCH", `/api/v1/notes/${rec.uuid}`, { title: `with ${v}` }, { "if-unmodified-since": v });
      expect(r.status).toBe(200);
    }
  });

  test("with If-Match, If-Match decides", async () => {
    const rec = await make("both");
    const { etag } = await read(rec.uuid);
    const old = httpDate(rec._modified - 3600);
    const ok = await s.apiJson("PATCH", `/api/v1/notes/${rec.uuid}`, { n: 1 }, { "if-match": etag!, "if-unmodified-since": old });
    expect(ok.status).toBe(200);
    const future = httpDate(Math.floor(Date.now() / 1000) + 3600);
    const stale = await s.apiJson("PATCH", `/api/v1/notes/${rec.uuid}`, { n: 2 }, { "if-match": etag!, "if-unmodified-since": future });
    expect(stale.status).toBe(412);
  });
});

describe("a record that does not exist", () => {
  test("upsert resource: a PUT with If-Match (even *) or If-Unmodified-Since is 412 and creates nothing", async () => {
    for (const [i, headers] of ([{ "if-match": "*" }, { "if-match": 'W/"0123456789abcdef01234567"' }, { "if-unmodified-since": httpDate(Math.floor(Date.now() / 1000) + 3600) }] as Record<string, string>[]).entries()) {
      const path = `/api/v1/settings/missing-${i}`;
      const r = await s.apiJson("PUT", path, { value: "x" }, headers);
      expect(r.status).toBe(412);
      expect(r.body!.message).toBe("PRECONDITION_FAILED");
      expect(r.body!.details).toContain("does not exist");
      expect(r.headers.get("etag")).toBeNull();
      expect((await s.apiJson("PATCH", path, { value: "x" }, headers)).status).toBe(412);
      expect((await s.apiJson("GET", path)).status).toBe(404);
    }
    // Without a precondition the same PUT creates, and its tag is the one a read gives.
    const made = await s.apiJson("PUT", "/api/v1/settings/missing-0", { value: "x" });
    expect(made.status).toBe(201);
    const got = await s.apiJson("GET", "/api/v1/settings/missing-0");
    expect(made.headers.get("etag")).toBe(got.headers.get("etag"));
    expect((await s.apiJson("PUT", "/api/v1/settings/missing-0", { value: "y" }, { "if-match": "*" })).status).toBe(200);
  });

  test("resource without upsert: 404 as without a precondition (RFC 9110 13.2.1), for writes and deletes", async () => {
    for (const method of ["PUT", "PATCH", "DELETE"]) {
      const r = await s.apiJson(method, "/api/v1/notes/never-was", method === "DELETE" ? undefined : { title: "x" }, { "if-match": "*" });
      expect(r.status).toBe(404);
    }
  });
});

describe("atomic with the write", () => {
  test("two PUTs racing with the same If-Match: exactly one is written, the other is 412", async () => {
    for (let round = 0; round < 8; round++) {
      const rec = await make(`race ${round}`);
      const { etag } = await read(rec.uuid);
      const [a, b] = await Promise.all(["a", "b"].map((who) => s.apiJson(round % 2 ? "PATCH" : "PUT", `/api/v1/notes/${rec.uuid}`, { title: who }, { "if-match": etag! })));
      expect([a.status, b.status].sort()).toEqual([200, 412]);
      const winner = a.status === 200 ? "a" : "b";
      const now = await read(rec.uuid);
      expect(now.rec!.title).toBe(winner);
      expect((a.status === 412 ? a : b).headers.get("etag")).toBe(now.etag);
    }
  });

  test("a PUT and a DELETE racing with the same If-Match: one of them wins", async () => {
    for (let round = 0; round < 4; round++) {
      const rec = await make(`put or delete ${round}`);
      const { etag } = await read(rec.uuid);
      const [put, del] = await Promise.all([
        s.apiJson("PUT", `/api/v1/notes/${rec.uuid}`, { title: "put" }, { "if-match": etag! }),
        s.apiJson("DELETE", `/api/v1/notes/${rec.uuid}`, undefined, { "if-match": etag! }),
      ]);
      const after = await read(rec.uuid);
      if (del.status === 200) {
        // The delete won: the PUT then finds no record, and answers 404 as it would without a precondition.
        expect(put.status).toBe(404);
        expect(after.status).toBe(404);
      } else {
        expect(del.status).toBe(412);
        expect(put.status).toBe(200);
        expect(after.rec!.title).toBe("put");
      }
    }
  });
});

test("bulk PUT on the collection takes no precondition (it applies to single-record writes)", async () => {
  const rec = await make("bulk");
  const r = await s.apiJson("PUT", "/api/v1/notes", { [rec.uuid]: { n: 5 } }, { "if-match": 'W/"000000000000000000000000"' });
  expect(r.status).toBe(200);
  expect((await read(rec.uuid)).rec!.n).toBe(5);
});

test("the OpenAPI document names the headers and the 412 on single-record writes", async () => {
  const doc = (await s.apiJson("GET", "/api/v1/openapi.json")).body as any;
  const one = doc.paths["/api/v1/notes/{uuid}"];
  for (const m of ["put", "patch", "delete"]) {
    expect(one[m].parameters.map((p: { name: string }) => p.name)).toEqual(["If-Match", "If-Unmodified-Since"]);
    expect(one[m].responses["412"]).toEqual({ $ref: "#/components/responses/PreconditionFailed" });
  }
  expect(one.put.responses["200"].headers.ETag).toBeDefined();
  expect(doc.paths["/api/v1/notes"].put.responses["412"]).toBeUndefined();
  expect(doc.components.responses.PreconditionFailed.headers.ETag).toBeDefined();
});

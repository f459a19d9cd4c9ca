/**
 * A history answer names each entry's user for people (`users`), without handing out addresses:
 * every signed-in reader sees the name, only readers who may view users see the e-mail.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { adminSite } from "./helpers/site";
import { call, tokenFor } from "./helpers/access";

const notes = { fields: { title: { type: "text", required: true } } };
let s: Awaited<ReturnType<typeof adminSite>>;
let reader: string;
let writerUuid: string;
let adminUuid: string;

beforeAll(async () => {
  s = await adminSite({ defs: { notes } });
  const role = await s.apiJson("POST", "/api/v1/roles", { name: "note-readers", permissions: ["view-notes", "edit-notes", "create-notes"] });
  expect(role.status).toBe(201);
  const roleUuid = Object.keys(role.body!.roles)[0];
  const writer = await s.apiJson("POST", "/api/v1/users", { email: "writer@example.com", name: "Wanda Writer", password: "writer-password-1", role: roleUuid, api: true });
  expect(writer.status).toBe(201);
  writerUuid = Object.keys(writer.body!.users)[0];
  reader = await tokenFor(s.base, "writer@example.com", "writer-password-1");
  adminUuid = Object.keys((await s.apiJson("GET", "/api/v1/users?filter=email:admin@example.com")).body!.users)[0];
}, 60_000);
afterAll(async () => { await s?.cleanup(); });

test("names for every signed-in reader; e-mail addresses only for those who may view users", async () => {
  const created = await s.apiJson("POST", "/api/v1/notes", { title: "by the admin" });
  const uuid = Object.keys(created.body!.notes)[0];
  const changed = await call(s.base, "PUT", `/api/v1/notes/${uuid}`, { body: { title: "by the writer" }, token: reader });
  expect(changed.status).toBe(200);

  const asAdmin = await s.apiJson("GET", `/api/v1/notes/${uuid}/history`);
  expect(asAdmin.status).toBe(200);
  expect(asAdmin.body!.history.map((e: { user: string }) => e.user)).toEqual([adminUuid, writerUuid]);
  expect(asAdmin.body!.users).toEqual({
    [adminUuid]: { name: null, email: "admin@example.com" },
    [writerUuid]: { name: "Wanda Writer", email: "writer@example.com" },
  });

  // The writer may not view users: names only, except their own address.
  const asWriter = await call(s.base, "GET", `/api/v1/notes/${uuid}/history`, { token: reader });
  expect(asWriter.status).toBe(200);
  expect(asWriter.body!.users).toEqual({
    [adminUuid]: { name: null },
    [writerUuid]: { name: "Wanda Writer", email: "writer@example.com" },
  });
  expect(JSON.stringify(asWriter.body)).not.toContain("admin@example.com");
});

test("without a signed-in caller, or for a user since deleted, no name is made up", async () => {
  const created = await call(s.base, "POST", "/api/v1/notes", { body: { title: "soon orphaned" }, token: reader });
  const uuid = Object.keys(created.body!.notes)[0];
  expect((await s.apiJson("DELETE", `/api/v1/users/${writerUuid}`)).status).toBe(200);
  const h = await s.apiJson("GET", `/api/v1/notes/${uuid}/history`);
  expect(h.body!.history[0].user).toBe(writerUuid);
  expect(h.body!.users).toEqual({});
  expect((await call(s.base, "GET", `/api/v1/notes/${uuid}/history`)).status).toBe(403);
});

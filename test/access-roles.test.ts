import { afterAll, beforeAll, expect, test } from "bun:test";
import { adminSite } from "./helpers/site";
import { addUser, call, tokenFor } from "./helpers/access";

let s: Awaited<ReturnType<typeof adminSite>>;
let token: string;
let roleUuid: string;
beforeAll(async () => {
  s = await adminSite();
  const r = await s.apiJson("POST", "/api/v1/roles", { name: "roleadmin", permissions: ["view-roles", "edit-roles", "create-roles"] });
  roleUuid = Object.keys(r.body!.roles)[0];
  await addUser(s.dir, "ra@example.com", "ra-password", { role: "roleadmin", api: true });
  token = await tokenFor(s.base, "ra@example.com", "ra-password");
});
afterAll(async () => { await s.cleanup(); });

test("edit-roles cannot hand out permissions its holder lacks, not even to its own role", async () => {
  const up = await call(s.base, "PUT", `/api/v1/roles/${roleUuid}`, { token, body: { permissions: ["view-roles", "edit-roles", "create-roles", "(all)"] } });
  expect(up.status).toBe(403);
  expect(up.body!.message).toBe("ACCESS_DENIED");
  const mk = await call(s.base, "POST", "/api/v1/roles", { token, body: { name: "sneaky", permissions: ["delete-users"] } });
  expect(mk.status).toBe(403);
  const fine = await call(s.base, "POST", "/api/v1/roles", { token, body: { name: "viewer", permissions: ["view-roles"] } });
  expect(fine.status).toBe(201);
  // Still only what it had: the caller's permissions did not change.
  expect((await call(s.base, "GET", "/api/v1/users", { token })).status).toBe(403);
});

test("restoring a role version with more permissions than the caller holds is refused", async () => {
  const r = await s.apiJson("POST", "/api/v1/roles", { name: "powerful", permissions: ["delete-users", "view-roles"] });
  const uuid = Object.keys(r.body!.roles)[0];
  const h1 = (await s.apiJson("GET", `/api/v1/roles/${uuid}/history`)).body!.history[0].id;
  await s.apiJson("PUT", `/api/v1/roles/${uuid}`, { permissions: ["view-roles"] });
  const back = await call(s.base, "POST", `/api/v1/roles/${uuid}/restore`, { token, body: { entry: h1 } });
  expect(back.status).toBe(403);
  const admin = await s.apiJson("POST", `/api/v1/roles/${uuid}/restore`, { entry: h1 });
  expect(admin.status).toBe(200);
  expect(admin.body!.roles[uuid].permissions).toEqual(["delete-users", "view-roles"]);
});

import { afterAll, beforeAll, expect, test } from "bun:test";
import { adminSite } from "./helpers/site";
import { call } from "./helpers/access";

let s: Awaited<ReturnType<typeof adminSite>>;
beforeAll(async () => { s = await adminSite({ env: { RESD_SESSION_TTL: "2" } }); });
afterAll(async () => { await s.cleanup(); });

const signIn = async () => {
  const r = await call(s.base, "POST", "/api/v1/session", { body: { email: s.email, password: "admin-password" } });
  expect(r.status).toBe(200);
  return (r.headers.get("set-cookie") ?? "").split(";")[0];
};
const me = (cookie: string) => call(s.base, "GET", "/api/v1/session", { headers: { cookie } });

test("a session expires RESD_SESSION_TTL seconds after its last use", async () => {
  const cookie = await signIn();
  expect((await me(cookie)).status).toBe(200);
  await Bun.sleep(2300);
  const r = await me(cookie);
  expect(r.status).toBe(401);
  expect((await call(s.base, "GET", "/api/v1/users", { headers: { cookie } })).status).toBe(403); // anonymous now
}, 15_000);

test("using a session keeps it alive (sliding expiry)", async () => {
  const cookie = await signIn();
  for (let i = 0; i < 6; i++) {
    await Bun.sleep(700);
    expect((await me(cookie)).status).toBe(200);
  }
}, 15_000);

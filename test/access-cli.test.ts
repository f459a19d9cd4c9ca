/** `resd user add|list|passwd|api|remove` and `resd token` through the real CLI. */
import { afterAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { cli, makeSite, serve } from "./helpers/site";
import { call } from "./helpers/access";
import { Database } from "bun:sqlite";
import { join } from "node:path";

// The stored hash is read from the SQLite file.
const dir = makeSite({ defs: { items: { fields: { title: { type: "text" } } } }, store: "sqlite" });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("resd user", () => {
  test("add creates a user with a hashed password; duplicates and bad input fail with exit 2", async () => {
    const add = await cli(dir, ["user", "add", "Cli@Example.com", "--password", "s3cret-long-1", "--role", "admin", "--name", "Cli", "--api", "--json"]);
    expect(add.code).toBe(0);
    const u = JSON.parse(add.stdout);
    expect(u).toMatchObject({ email: "cli@example.com", name: "Cli", role: "admin" });
    expect(u).not.toHaveProperty("password");
    const db = new Database(join(dir, "data", "resd.db"), { readonly: true });
    const stored = JSON.parse((db.query(`SELECT data FROM "r:users" WHERE uuid = ?`).get(u.uuid) as { data: string }).data);
    db.close();
    expect(stored.password).toStartWith("$argon2id$");
    expect(stored.api).toBe(true);
    const dup = await cli(dir, ["user", "add", "cli@example.com", "--password", "x-long-password"]);
    expect(dup.code).toBe(2);
    expect(dup.stderr).toContain("email");
    expect((await cli(dir, ["user", "add", "not-an-email", "--password", "x-long-password"])).code).toBe(2);
    expect((await cli(dir, ["user", "add", "r@example.com", "--password", "x-long-password", "--role", "no-such-role"])).code).toBe(2);
    expect((await cli(dir, ["user", "add", "plain@example.com", "--password", "plain-password-1"])).code).toBe(0);
  }, 30_000);

  test("list shows users with role and API flag, never passwords", async () => {
    const text = await cli(dir, ["user", "list"]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/cli@example\.com\tadmin\tapi=on\tCli/);
    expect(text.stdout).toMatch(/plain@example\.com\t\tapi=off/);
    expect(text.stdout).not.toContain("argon2");
    const json = JSON.parse((await cli(dir, ["user", "list", "--json"])).stdout) as Record<string, unknown>[];
    expect(json.map((u) => u.email)).toEqual(["cli@example.com", "plain@example.com"]);
    expect(json[0]).toMatchObject({ api: true, role: "admin" });
  }, 30_000);

  test("token prints a working token; refused without API access; unknown user 2", async () => {
    const t = await cli(dir, ["token", "cli@example.com"]);
    expect(t.code).toBe(0);
    const json = JSON.parse((await cli(dir, ["token", "cli@example.com", "--json"])).stdout);
    expect(json.token_expires - json.token_created).toBe(600);
    const srv = await serve(dir);
    try {
      expect((await call(srv.base, "GET", "/api/v1/items", { token: t.stdout.trim() })).status).toBe(200);
      const noApi = await cli(dir, ["token", "plain@example.com"]);
      expect(noApi.code).toBe(2);
      expect(noApi.stderr).toContain("no API access");
      expect((await cli(dir, ["token", "ghost@example.com"])).code).toBe(2);
      // api --on and passwd while the server runs.
      expect((await cli(dir, ["user", "api", "plain@example.com", "--on"])).code).toBe(0);
      expect((await cli(dir, ["token", "plain@example.com"])).code).toBe(0);
      expect((await cli(dir, ["user", "passwd", "plain@example.com", "--password", "newer-password-2"])).code).toBe(0);
      expect((await call(srv.base, "POST", "/api/v1/auth/token", { body: { email: "plain@example.com", password: "plain-password-1" } })).status).toBe(401);
      expect((await call(srv.base, "POST", "/api/v1/auth/token", { body: { email: "plain@example.com", password: "newer-password-2" } })).status).toBe(200);
    } finally {
      await srv.stop();
    }
  }, 30_000);

  test("api needs exactly one of --on/--off; passwd refuses an empty password; remove deletes", async () => {
    expect((await cli(dir, ["user", "api", "plain@example.com"])).code).not.toBe(0);
    expect((await cli(dir, ["user", "api", "plain@example.com", "--on", "--off"])).code).not.toBe(0);
    expect((await cli(dir, ["user", "passwd", "plain@example.com", "--password", ""])).code).toBe(2);
    expect((await cli(dir, ["user", "remove", "plain@example.com", "--json"])).stdout).toContain('"ok":true');
    expect((await cli(dir, ["user", "remove", "plain@example.com"])).code).toBe(2);
    expect((await cli(dir, ["user", "list"])).stdout).not.toContain("plain@example.com");
  }, 30_000);
});

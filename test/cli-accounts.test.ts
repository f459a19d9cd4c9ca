/** Roles from the shell, a minimum password length on every path, and a password typed without echo. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { adminSite, cli, makeSite, MAIN, siteEnv } from "./helpers/site";

const dirs: string[] = [];
afterAll(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });
const site = () => {
  const d = makeSite({ defs: { notes: { fields: { title: { type: "text" } } } } });
  dirs.push(d);
  return d;
};
const withStdin = (stdin: string) => ({ stdin });

describe("resd role", () => {
  test("add, list, set, remove; --if-missing; the built-in admin is protected", async () => {
    const dir = site();
    const add = await cli(dir, ["role", "add", "editor", "view-notes", "edit-notes", "--json"]);
    expect(add.code).toBe(0);
    expect(JSON.parse(add.stdout)).toMatchObject({ name: "editor", permissions: ["view-notes", "edit-notes"] });
    expect(add.stderr).toBe("");
    // A second add is refused; with --if-missing it is a no-op, exit 0, permissions unchanged.
    expect((await cli(dir, ["role", "add", "editor", "view-notes"])).code).toBe(2);
    const again = await cli(dir, ["role", "add", "editor", "manage-notes", "--if-missing", "--json"]);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ existed: true, permissions: ["view-notes", "edit-notes"] });

    const set = await cli(dir, ["role", "set", "editor", "view-notes", "view-notse"]);
    expect(set.code).toBe(0);
    expect(set.stdout).toContain("role editor now has: view-notes, view-notse");
    expect(set.stderr).toContain("view-notse names no resource");
    const list = JSON.parse((await cli(dir, ["role", "list", "--json"])).stdout) as { name: string; permissions: string[] }[];
    expect(list.map((r) => [r.name, r.permissions])).toEqual([["admin", ["(all)"]], ["editor", ["view-notes", "view-notse"]]]);

    // The role works: a user holding it reads notes and may not create them.
    expect((await cli(dir, ["user", "add", "ed@example.com", "--password-stdin", "--role", "editor", "--api"], withStdin("editor-password\n"))).code).toBe(0);
    const users = await cli(dir, ["user", "list"]);
    expect(users.stdout).toContain("ed@example.com\teditor\t");

    expect((await cli(dir, ["role", "set", "admin", "view-notes"])).code).toBe(2);
    expect((await cli(dir, ["role", "remove", "admin"])).code).toBe(2);
    const held = await cli(dir, ["role", "remove", "editor"]);
    expect(held.code).toBe(2);
    expect(held.stderr).toContain("1 user(s) hold role editor (ed@example.com)");
    expect((await cli(dir, ["role", "remove", "editor", "--force"])).code).toBe(0);
    expect((await cli(dir, ["user", "list"])).stdout).toContain("(deleted role ");
    expect((await cli(dir, ["role", "remove", "nope"])).code).toBe(2);
  });

  test("the permissions a role gets are the ones the server enforces", async () => {
    const s = await adminSite({ defs: { notes: { fields: { title: { type: "text" } } } } });
    try {
      expect((await cli(s.dir, ["role", "add", "reader", "view-notes"])).code).toBe(0);
      expect((await cli(s.dir, ["user", "add", "r@example.com", "--password-stdin", "--role", "reader", "--api"], withStdin("reader-password\n"))).code).toBe(0);
      const token = (await cli(s.dir, ["token", "r@example.com"])).stdout.trim();
      const as = (method: string, body?: unknown) => fetch(`${s.base}/api/v1/notes`, { method, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: body ? JSON.stringify(body) : undefined });
      expect((await as("GET")).status).toBe(200);
      expect((await as("POST", { title: "x" })).status).toBe(403);
      expect((await cli(s.dir, ["role", "set", "reader", "view-notes", "create-notes"])).code).toBe(0);
      expect((await as("POST", { title: "x" })).status).toBe(201);
    } finally {
      await s.cleanup();
    }
  });
});

describe("minimum password length (RESD_PASSWORD_MIN_LENGTH, default 10)", () => {
  test("CLI: user add and passwd refuse a short password with exit 2, nothing written", async () => {
    const dir = site();
    const short = await cli(dir, ["user", "add", "a@example.com", "--password-stdin"], withStdin("123456789\n"));
    expect(short.code).toBe(2);
    expect(short.stderr).toContain("password: must be at least 10 characters");
    expect((await cli(dir, ["user", "list"])).stdout).not.toContain("a@example.com");
    expect((await cli(dir, ["user", "add", "a@example.com", "--password-stdin"], withStdin("1234567890\n"))).code).toBe(0);
    expect((await cli(dir, ["user", "passwd", "a@example.com", "--password", "short"])).code).toBe(2);
    // Characters, not bytes: ten letters of any script are ten.
    expect((await cli(dir, ["user", "passwd", "a@example.com", "--password-stdin"], withStdin("ääääääääää\n"))).code).toBe(0);
    // The setting moves the bound.
    expect((await cli(dir, ["user", "add", "b@example.com", "--password", "four"], { env: { RESD_PASSWORD_MIN_LENGTH: "4" } })).code).toBe(0);
    expect((await cli(dir, ["user", "add", "c@example.com", "--password", "x"], { env: { RESD_PASSWORD_MIN_LENGTH: "0" } })).code).toBe(2);
  });

  test("API and import: 422 naming the field; an import rejects that row alone", async () => {
    const s = await adminSite();
    try {
      const r = await s.apiJson("POST", "/api/v1/users", { email: "short@example.com", password: "pw" });
      expect(r.status).toBe(422);
      expect(r.body!.errors).toEqual({ password: "must be at least 10 characters" });
      const ok = await s.apiJson("POST", "/api/v1/users", { email: "long@example.com", password: "long-enough-pw" });
      expect(ok.status).toBe(201);
      const upd = await s.apiJson("PATCH", `/api/v1/users/${Object.keys(ok.body!.users)[0]}`, { password: "tiny" });
      expect(upd.status).toBe(422);
      const form = new FormData();
      form.append("file", new Blob([JSON.stringify([{ email: "i1@example.com", password: "abc" }, { email: "i2@example.com", password: "abcdefghijk" }])]), "u.json");
      const imp = await fetch(`${s.base}/api/v1/users/import`, { method: "POST", headers: { authorization: `Bearer ${s.token}` }, body: form });
      const body = (await imp.json()) as { stats: Record<string, number>; errors_detail: { row: number; field: string; reason: string }[] };
      expect(body.stats).toMatchObject({ created: 1, errors: 1 });
      expect(body.errors_detail).toEqual([{ row: 1, field: "password", reason: "must be at least 10 characters" }]);
    } finally {
      await s.cleanup();
    }
  });
});

describe("a password typed at the terminal", () => {
  /** Runs resd under a pseudo-terminal (`script`), answering each prompt only once it is shown, as a person would. */
  async function onTerminal(dir: string, args: string[], answers: string[]) {
    const cmd = ["bun", MAIN, ...args, "--dir", dir].map((a) => `'${a}'`).join(" ");
    const p = Bun.spawn(["script", "-qec", cmd, "/dev/null"], { stdin: "pipe", stdout: "pipe", stderr: "pipe", env: { ...process.env, ...siteEnv(dir) } });
    let out = "";
    const reading = (async () => { for await (const c of p.stdout) out += new TextDecoder().decode(c); })();
    const prompts = ["New password: ", "Repeat it: "];
    for (const [i, answer] of answers.entries()) {
      const end = Date.now() + 15_000;
      while (out.split(prompts[i]).length < 2 && Date.now() < end) await Bun.sleep(20);
      await Bun.sleep(50); // the prompt is written just before raw mode is set
      p.stdin.write(`${answer}\r`);
      p.stdin.flush();
    }
    const code = await p.exited;
    await reading;
    p.stdin.end();
    return { code, out };
  }

  test("asked twice without echo when neither --password nor --password-stdin is given", async () => {
    const dir = site();
    const r = await onTerminal(dir, ["user", "add", "tty@example.com", "--role", "admin", "--api"], ["typed-secret-42", "typed-secret-42"]);
    expect(r.out).toContain("New password: ");
    expect(r.out).toContain("Repeat it: ");
    expect(r.out).not.toContain("typed-secret-42");
    expect(r.code).toBe(0);
    expect(r.out).toContain("created user tty@example.com");
    // It is the password: a session can be opened with it.
    const s = await cli(dir, ["token", "tty@example.com"]);
    expect(s.code).toBe(0);
    const mismatch = await onTerminal(dir, ["user", "passwd", "tty@example.com"], ["first-secret-1", "other-secret-2"]);
    expect(mismatch.code).toBe(2);
    expect(mismatch.out).toContain("the two passwords differ");
  }, 60_000);

  test("piped without a password: refused at once (exit 2), never waiting for input", async () => {
    const dir = site();
    const r = await cli(dir, ["user", "add", "nopw@example.com"], withStdin(""));
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--password-stdin");
  });
});

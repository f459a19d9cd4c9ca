/**
 * Attacks on git-status and git-pull (issue 34): symlinks, bad definitions, credentials, hanging
 * remotes, odd commits. Each test states what must hold; written by an attacker, kept as guards.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { adminSite, cli, makeSite, serve, type Server } from "./helpers/site";
import { addUser, call, tokenFor } from "./helpers/access";
import { DefinitionError, loadDefinitions } from "../src/core/definitions/load";
import { def, gitIn } from "./helpers/git";

const md5 = (s: string) => new Bun.CryptoHasher("md5").update(s).digest("hex");

// ---------------------------------------------------------------------------------------------
// .pages
// ---------------------------------------------------------------------------------------------

const NEWS = def({ title: { type: "text", required: true } });

describe("git-status and git-pull under attack", () => {
  let root = "";
  let remote = "";
  let dev = "";
  let server: Server;
  let token = "";
  let marker = "";

  /** Writes (null: deletes; {link}: a symbolic link) in the developer's clone, commits, pushes. */
  function push(message: string, files: Record<string, string | null | { link: string } | { exec: string }>): string {
    for (const [path, text] of Object.entries(files)) {
      const full = join(dev, path);
      if (text === null) gitIn(dev, "rm", "-q", "-r", path);
      else {
        mkdirSync(dirname(full), { recursive: true });
        rmSync(full, { force: true, recursive: true });
        if (typeof text === "string") writeFileSync(full, text);
        else if ("link" in text) symlinkSync(text.link, full);
        else {
          writeFileSync(full, text.exec);
          chmodSync(full, 0o755);
        }
        gitIn(dev, "add", path);
      }
    }
    gitIn(dev, "commit", "-q", "--allow-empty", "-m", message);
    gitIn(dev, "push", "-q", "origin", "main");
    return gitIn(dev, "rev-parse", "HEAD");
  }
  const api = (method: string, path: string, body?: unknown) => call(server.base, method, path, { token, body });
  const status = (query = "") => api("GET", `/api/v1/git-status${query}`);
  const pull = () => api("POST", "/api/v1/git-pull");
  const head = () => gitIn(server.dir, "rev-parse", "HEAD");
  /** Puts the developer's clone and the remote back to the site's commit (a refused pull leaves the remote ahead). */
  const resetRemoteTo = (commit: string) => {
    gitIn(dev, "reset", "-q", "--hard", commit);
    gitIn(dev, "push", "-q", "-f", "origin", "main");
  };

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "resd-attack-git-"));
    marker = join(root, "HOOK-RAN");
    remote = join(root, "remote.git");
    gitIn(root, "init", "-q", "--bare", "-b", "main", remote);
    dev = join(root, "dev");
    gitIn(root, "clone", "-q", remote, dev);
    push("first", {
      ".gitignore": "data/\n.env\n",
      "resources/news.json": NEWS,
      // A definition shared from elsewhere in the repository, as monorepos do.
      "shared/linked.json": def({ name: { type: "text" } }),
      "resources/linked.json": { link: "../shared/linked.json" },
    });
    const dir = makeSite();
    gitIn(dir, "clone", "-q", remote, ".");
    const add = await cli(dir, ["user", "add", "admin@example.com", "--password", "admin-password", "--role", "admin", "--api"]);
    if (add.code !== 0) throw new Error(add.stderr);
    token = (await cli(dir, ["token", "admin@example.com"])).stdout.trim();
    server = await serve(dir);
    // resd serve takes the linked definition: it is a resource.
    expect((await api("GET", "/api/v1/linked")).status).toBe(200);
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    if (server) rmSync(server.dir, { recursive: true, force: true });
    rmSync(root, { recursive: true, force: true });
  });

  test("?fetch=banana (or off): a 400 naming fetch, not a silent 20 s fetch", async () => {
    for (const v of ["banana", "off"]) {
      const r = await status(`?fetch=${v}`);
      expect({ v, status: r.status }).toEqual({ v, status: 400 });
      expect(r.body!.message).toBe("INVALID_DATA");
    }
  });

  test("a definition reached through a committed symbolic link: a pull that breaks its target is refused (422), HEAD stays", async () => {
    const before = head();
    push("break the shared definition", { "shared/linked.json": def({ name: { type: "bogus" } }) });
    const r = await pull();
    try {
      expect({ status: r.status, body: r.body }).toMatchObject({ status: 422, body: { message: "INVALID_DATA", file: "shared/linked.json" } });
      expect(head()).toBe(before);
      expect((await api("GET", "/api/v1/linked")).status).toBe(200);
    } finally {
      if (head() !== before) gitIn(server.dir, "reset", "-q", "--hard", before);
      resetRemoteTo(before);
      await api("POST", "/api/v1/git-pull");
    }
  });

  test("a pull that adds a definition as a symbolic link to a valid file (what resd serve loads) is taken", async () => {
    const before = head();
    push("another linked definition", { "shared/other.json": def({ name: { type: "text" } }), "resources/other.json": { link: "../shared/other.json" } });
    const r = await pull();
    try {
      expect({ status: r.status, body: r.body }).toMatchObject({ status: 200, body: { definitions: { added: ["other"] } } });
    } finally {
      if (r.status !== 200) resetRemoteTo(before);
    }
  });

  test("a symbolic link committed into resources/ pointing outside the site: refused (422), nothing served from outside", async () => {
    const secret = join(root, "outside.json");
    writeFileSync(secret, def({ leaked: { type: "text" } }));
    const before = head();
    push("link out", { "resources/outside.json": { link: secret } });
    const r = await pull();
    try {
      expect(r.status).toBe(422);
      expect(head()).toBe(before);
      expect((await api("GET", "/api/v1/outside")).status).toBe(404);
    } finally {
      if (head() !== before) gitIn(server.dir, "reset", "-q", "--hard", before);
      resetRemoteTo(before);
    }
  });

  const invalidButJson: [string, string][] = [
    ["an array", "[]\n"],
    ["null", "null\n"],
    ["fields null", '{"fields":null}\n'],
    ["a select of a missing resource", def({ a: { type: "select", resource: "nosuch" } })],
    ["unique is a number", def({ t: { type: "text" } }, { unique: 5 })],
    ["hidden is an object", def({ t: { type: "text" } }, { hidden: { t: true } })],
    ["index is a string", def({ t: { type: "text" } }, { index: "t" })],
    ["validate rule is a number", def({ t: { type: "text" } }, { validate: { t: 5 } })],
  ];
  for (const [what, text] of invalidButJson) {
    test(`a definition that is valid JSON but no resource (${what}): 422 naming the file, HEAD stays, still serving`, async () => {
      const before = head();
      push(`bad: ${what}`, { "resources/bad.json": text });
      const r = await pull();
      try {
        expect({ status: r.status, body: r.body }).toMatchObject({ status: 422, body: { message: "INVALID_DATA", file: "resources/bad.json", refusal: "invalid" } });
        expect(head()).toBe(before);
        expect((await api("GET", "/api/v1/news")).status).toBe(200);
      } finally {
        if (head() !== before) gitIn(server.dir, "reset", "-q", "--hard", before);
        resetRemoteTo(before);
      }
    });
  }

  test("a resource called .pages or git-status arriving by pull: refused (422), the endpoints stay as they are", async () => {
    for (const name of [".pages", "git-status"]) {
      const before = head();
      push(`a resource ${name}`, { [`resources/${name}.json`]: def({ title: { type: "text" } }) });
      const r = await pull();
      try {
        // Whatever the answer, the endpoints keep their meaning.
        const st = await status("?fetch=0");
        const pg = await api("GET", "/api/v1/.pages");
        const rec = name === ".pages" ? await api("POST", "/api/v1/.pages", { title: "a record?" }) : null;
        const hist = name === ".pages" ? await api("GET", `/api/v1/.pages/${md5("/x")}/history`) : null;
        console.log(name, r.status, st.status, Object.keys(st.body ?? {}), pg.status, Object.keys(pg.body ?? {}), rec?.status, JSON.stringify(rec?.body)?.slice(0, 300), hist?.status);
        expect(st.body!.git).toBeDefined();
        expect(pg.body!.pages).toBeDefined();
        expect({ name, status: r.status, body: r.body }).toMatchObject({ name, status: 422 });
        expect(head()).toBe(before);
      } finally {
        if (head() !== before) gitIn(server.dir, "reset", "-q", "--hard", before);
        resetRemoteTo(before);
        await pull();
      }
    }
  });

  test("a resource named .pages (pulled): an allow tag on it must not hand the feature view-.pages to every signed-in user", async () => {
    const before = head();
    push("a resource .pages", { "resources/.pages.json": def({ title: { type: "text" } }) });
    const pulled = await pull();
    let plain = "";
    try {
      if (pulled.status !== 200) return; // refused: nothing to escalate through
      const role = await api("POST", "/api/v1/roles", { name: "plain", permissions: [] });
      const user = await api("POST", "/api/v1/users", { email: "plain@example.com", password: "plain-password-1", role: Object.keys(role.body!.roles)[0], api: true });
      expect(user.status).toBe(201);
      plain = await tokenFor(server.base, "plain@example.com", "plain-password-1");
      expect((await call(server.base, "GET", "/api/v1/.pages?kind=route", { token: plain })).status).toBe(403);
      const tag = await api("POST", "/api/v1/.pages", { url: "/api/v1/.pages", text: "[#api-allow get .pages#]" });
      const after = await call(server.base, "GET", "/api/v1/.pages?kind=route", { token: plain });
      expect({ tag: tag.status, plainSeesRouteFiles: after.status }).toEqual({ tag: 422, plainSeesRouteFiles: 403 });
    } finally {
      rmSync(join(server.dir, "ext/uri/api/v1/.pages"), { recursive: true, force: true });
      if (head() !== before) gitIn(server.dir, "reset", "-q", "--hard", before);
      resetRemoteTo(before);
      await pull();
    }
  });

  test("a commit deleting a resource that holds records: pulled, its records kept, back when the definition returns", async () => {
    const before = head();
    push("events", { "resources/events.json": def({ title: { type: "text" } }) });
    expect((await pull()).status).toBe(200);
    expect((await api("POST", "/api/v1/events", { title: "keep me" })).status).toBe(201);
    push("drop events", { "resources/events.json": null });
    const r = await pull();
    expect(r.status).toBe(200);
    expect(r.body!.definitions.removed).toEqual(["events"]);
    expect((await api("GET", "/api/v1/events")).status).toBe(404);
    push("events again", { "resources/events.json": def({ title: { type: "text" } }) });
    expect((await pull()).status).toBe(200);
    const back = await api("GET", "/api/v1/events");
    expect(back.body!.count).toBe(1);
    expect(head()).not.toBe(before);
  });

  test("hooks and attributes committed to the repository are never run (only the local .git/hooks are git's)", async () => {
    push("hostile hooks", {
      ".githooks/post-merge": { exec: `#!/bin/sh\ntouch ${marker}\n` },
      "hooks/post-merge": { exec: `#!/bin/sh\ntouch ${marker}\n` },
      ".gitattributes": "*.json filter=evil\n",
      ".gitmodules": `[submodule "x"]\n\tpath = vendor/x\n\turl = https://deploy:sub-s3cret@127.0.0.1:9/x.git\n`,
    });
    const r = await pull();
    expect(r.status).toBe(200);
    expect(existsSync(marker)).toBe(false);
    const s = await status("?fetch=0");
    expect(JSON.stringify(s.body)).not.toContain("sub-s3cret");
    expect(JSON.stringify(r.body)).not.toContain("sub-s3cret");
  });

  test("a commit subject holding git's own separators (\\x1e) does not make up commits", async () => {
    const before = head();
    const to = push("one\x1etwo", { "notes.txt": "sep\n" });
    const r = await pull();
    expect(r.status).toBe(200);
    expect(r.body!.pulled.commits).toHaveLength(1);
    expect(r.body!.pulled.commits[0]).toMatchObject({ commit: to, author: "Ann Author" });
    expect(r.body!.pulled.commits[0].commit).toBe(to);
    expect(r.body!.count).toBe(1);
    expect(before).not.toBe(to);
  });

  test("a huge commit message (1 MB): pulled and shown within bounds", async () => {
    const huge = `big ${"x".repeat(1024 * 1024)}`;
    const msgFile = join(root, "msg.txt");
    writeFileSync(msgFile, huge);
    writeFileSync(join(dev, "notes.txt"), "huge\n");
    gitIn(dev, "add", "notes.txt");
    gitIn(dev, "commit", "-q", "-F", msgFile);
    gitIn(dev, "push", "-q", "origin", "main");
    const t0 = Date.now();
    const r = await pull();
    expect(r.status).toBe(200);
    expect(Date.now() - t0).toBeLessThan(15_000);
    const s = await status("?fetch=0");
    expect(s.status).toBe(200);
  }, 30_000);

  for (const url of [
    "https://deploy:it's-s3cret@127.0.0.1:9/site.git",
    "https://deploy:(s3cret)!*$@127.0.0.1:9/site.git",
    "https://deploy:s3cret%40x@127.0.0.1:9/site.git",
    "HTTPS://deploy:s3cret@127.0.0.1:9/site.git",
  ]) {
    test(`credentials in the remote URL are masked everywhere: ${url.replace(/s3cret/, "…")}`, async () => {
      gitIn(server.dir, "remote", "set-url", "origin", url);
      try {
        const s = await status();
        expect(s.status).toBe(200);
        expect(JSON.stringify(s.body)).not.toContain("s3cret");
        const p = await pull();
        expect(JSON.stringify(p.body)).not.toContain("s3cret");
      } finally {
        gitIn(server.dir, "remote", "set-url", "origin", remote);
      }
    }, 60_000);
  }

  test("a branch whose remote is a URL with credentials (branch.main.remote = https://user:pass@…): never shown", async () => {
    const url = "https://deploy:branch-s3cret@127.0.0.1:9/site.git";
    gitIn(server.dir, "config", "branch.main.remote", url);
    try {
      const s = await status();
      expect(s.status).toBe(200);
      expect(JSON.stringify(s.body)).not.toContain("branch-s3cret");
      const p = await pull();
      expect(JSON.stringify(p.body)).not.toContain("branch-s3cret");
    } finally {
      gitIn(server.dir, "config", "branch.main.remote", "origin");
    }
  }, 60_000);

  test("a remote that accepts and never answers: status within the 20 s bound (fetched: false, reason), pull 502 within it too, no git left running", async () => {
    const sockets: unknown[] = [];
    const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { open(sock) { sockets.push(sock); }, data() {} } });
    const url = `http://127.0.0.1:${listener.port}/hang.git`;
    gitIn(server.dir, "remote", "set-url", "origin", url);
    try {
      const t0 = Date.now();
      const [s, p] = await Promise.all([status(), Bun.sleep(300).then(() => pull())]);
      const took = Date.now() - t0;
      expect(s.status).toBe(200);
      expect(s.body!.git).toMatchObject({ fetched: false });
      expect(s.body!.git.fetch_reason).toMatch(/20 s/);
      expect(p.status).toBe(502);
      expect(took).toBeLessThan(26_000);
      // The server answers other requests meanwhile and afterwards.
      expect((await status("?fetch=0")).status).toBe(200);
      await Bun.sleep(500);
      const ps = Bun.spawnSync(["ps", "-eo", "pid,args"], { stdout: "pipe" }).stdout.toString();
      expect(ps.split("\n").filter((l) => l.includes(`127.0.0.1:${listener.port}`))).toEqual([]);
    } finally {
      gitIn(server.dir, "remote", "set-url", "origin", remote);
      listener.stop(true);
    }
  }, 60_000);

  test("git-status on a detached HEAD: 200 with branch null; a pull is a 409, not a 500", async () => {
    const h = head();
    gitIn(server.dir, "checkout", "-q", "--detach", h);
    try {
      const s = await status();
      expect(s.status).toBe(200);
      expect(s.body!.git).toMatchObject({ branch: null, upstream: null });
      const p = await pull();
      expect(p.status).toBe(409);
    } finally {
      gitIn(server.dir, "checkout", "-q", "main");
    }
  });

  test("a pull that turns resources/ into a symbolic link to a folder outside the site: refused (422), nothing loaded from there", async () => {
    const outsideDefs = join(root, "outside-defs");
    mkdirSync(outsideDefs, { recursive: true });
    writeFileSync(join(outsideDefs, "news.json"), def({ title: { type: "bogus" } }));
    const before = head();
    const tracked = gitIn(dev, "ls-files", "resources").split("\n").filter(Boolean);
    const gone = Object.fromEntries(tracked.map((f) => [f, null]));
    push("resources from elsewhere", gone);
    push("resources as a link", { resources: { link: outsideDefs } });
    const r = await pull();
    try {
      expect({ status: r.status, body: r.body, head: head() }).toMatchObject({ status: 422, head: before });
      expect((await api("GET", "/api/v1/news")).status).toBe(200);
    } finally {
      if (head() !== before) {
        gitIn(server.dir, "reset", "-q", "--hard", before);
      }
      resetRemoteTo(before);
    }
  }, 30_000);
});


describe("the definitions loader (what resd serve and a pull both load)", () => {
  const loadOne = (name: string, text: string) => {
    const dir = mkdtempSync(join(tmpdir(), "resd-loader-"));
    try {
      mkdirSync(join(dir, "resources"));
      writeFileSync(join(dir, "resources", `${name}.json`), text);
      return loadDefinitions(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  const refusal = (name: string, text: string) => {
    try {
      loadOne(name, text);
    } catch (e) {
      if (e instanceof DefinitionError) return { file: e.file.replace(/^.*\/resources\//, "resources/"), field: e.field, message: e.message };
      return { notADefinitionError: String(e) };
    }
    return null;
  };

  test("a resource named like a fixed endpoint under /api/v1 is refused, naming the file", () => {
    for (const name of [".pages", ".files", ".resources", ".deleted", ".system-messages", "git-status", "git-pull", "session", "empty-resource", "openai"]) {
      expect({ name, r: refusal(name, NEWS) }).toMatchObject({ name, r: { file: `resources/${name}.json`, message: expect.stringContaining("fixed endpoint") } });
    }
    // Names next to them are fine.
    expect(loadOne("pages", NEWS).has("pages")).toBe(true);
    expect(loadOne("git", NEWS).has("git")).toBe(true);
  });

  test("root keys of the wrong JSON type are invalid definitions naming the file (and the field), never a TypeError", () => {
    const cases: [string, string, string | null][] = [
      ["unique: 5", def({ t: { type: "text" } }, { unique: 5 }), null],
      ["hidden: {…}", def({ t: { type: "text" } }, { hidden: { t: true } }), null],
      ["encrypt: true", def({ t: { type: "text" } }, { encrypt: true }), null],
      ["index: \"t\"", def({ t: { type: "text" } }, { index: "t" }), null],
      ["index: [5]", def({ t: { type: "text" } }, { index: [5] }), null],
      ["validate: {t: 5}", def({ t: { type: "text" } }, { validate: { t: 5 } }), "t"],
      ["sort: \"t\"", def({ t: { type: "text" } }, { sort: "t" }), null],
      ["slug source: 5", def({ t: { type: "text" }, s: { type: "slug", source: 5 } }), "s"],
    ];
    for (const [what, text, field] of cases) {
      expect({ what, r: refusal("bad", text) }).toMatchObject({ what, r: { file: "resources/bad.json", field } });
    }
    // The right types still load.
    const ok = loadOne("good", def({ t: { type: "text" }, u: { type: "text" } }, { unique: ["t"], hidden: "u", index: ["t", ["t", "u"]], validate: { t: ["natural-short-text"] } }));
    expect(ok.get("good")!.unique).toEqual(["t"]);
  });
});

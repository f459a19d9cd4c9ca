/**
 * Deploying definitions with git (issue 34): `GET /api/v1/git-status` and `POST /api/v1/git-pull`
 * through the real server and the real `git`. A bare repository in a temporary folder is the
 * remote; the site folder is a clone of it; the test pushes commits from another clone, as a
 * developer would.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { cli, makeSite, serve, type Server } from "./helpers/site";
import { call, tokenFor } from "./helpers/access";
import { def, gitIn } from "./helpers/git";

/** The test's own git: a fixed author, no user or system configuration (signing, hooks). */
const NEWS = def({ title: { type: "text", required: true } });
const EVENTS = def({ title: { type: "text", required: true } });

let root = "";
let remote = "";
let dev = "";
let server: Server;
let token = "";
const tokens: Record<string, string> = {};

/** Writes (or, for null, deletes) files in the developer's clone, commits and pushes; the new commit. */
function push(message: string, files: Record<string, string | null>): string {
  for (const [path, text] of Object.entries(files)) {
    if (text === null) gitIn(dev, "rm", "-q", path);
    else {
      mkdirSync(dirname(join(dev, path)), { recursive: true });
      writeFileSync(join(dev, path), text);
      gitIn(dev, "add", path);
    }
  }
  gitIn(dev, "commit", "-q", "-m", message);
  gitIn(dev, "push", "-q", "origin", "main");
  return gitIn(dev, "rev-parse", "HEAD");
}

const api = (method: string, path: string, body?: unknown, as = token) => call(server.base, method, path, { token: as, body });
const status = (query = "") => api("GET", `/api/v1/git-status${query}`);
const pull = (as = token) => api("POST", "/api/v1/git-pull", undefined, as);
const head = () => gitIn(server.dir, "rev-parse", "HEAD");

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "resd-git-"));
  remote = join(root, "remote.git");
  gitIn(root, "init", "-q", "--bare", "-b", "main", remote);
  dev = join(root, "dev");
  gitIn(root, "clone", "-q", remote, dev);
  push("first: news, git, pages", {
    ".gitignore": "data/\n.env\n",
    "resources/news.json": NEWS,
    // Resources named like the feature permissions: holding their permissions grants nothing here.
    "resources/git.json": def({ name: { type: "text" } }),
    "resources/pages.json": def({ name: { type: "text" } }),
    // ...and a route file that opens `view-git` (the resource's GET) to every visitor.
    "ext/uri/api/v1/git/index.tpl": "[#api-allow get git#]\n",
  });
  const dir = makeSite();
  gitIn(dir, "clone", "-q", remote, ".");
  const add = await cli(dir, ["user", "add", "admin@example.com", "--password", "admin-password", "--role", "admin", "--api"]);
  if (add.code !== 0) throw new Error(add.stderr);
  token = (await cli(dir, ["token", "admin@example.com"])).stdout.trim();
  server = await serve(dir);
  // Through the API (a CLI process each would take seconds on a busy machine).
  await Promise.all(Object.entries({
    editor: ["view-news", "create-news"],
    gitviewer: ["view-git"],
    deployer: ["view-git", "pull-git"],
    lookalike: ["manage-git", "api_(any)_git", "api_get_git", "manage-pages", "view-pages", "api_(any)", "edit-.git", "view-.git"],
  }).map(async ([name, permissions]) => {
    const role = await api("POST", "/api/v1/roles", { name, permissions });
    if (role.status !== 201) throw new Error(JSON.stringify(role.body));
    const user = await api("POST", "/api/v1/users", { email: `${name}@example.com`, password: "user-password-1", role: Object.keys(role.body!.roles)[0], api: true });
    if (user.status !== 201) throw new Error(JSON.stringify(user.body));
    tokens[name] = await tokenFor(server.base, `${name}@example.com`, "user-password-1");
  }));
}, 120_000);

afterAll(async () => {
  await server?.stop();
  if (server) rmSync(server.dir, { recursive: true, force: true });
  rmSync(root, { recursive: true, force: true });
});

describe("git-status", () => {
  test("a fresh clone: its branch, upstream and last commit, nothing behind, fetched now", async () => {
    const r = await status();
    expect(r.status).toBe(200);
    const git = r.body!.git;
    expect(git).toMatchObject({ available: true, branch: "main", upstream: "origin/main", ahead: 0, behind: 0, fetched: true, prefix: "" });
    expect(git.head).toMatchObject({ commit: head(), subject: "first: news, git, pages", author: "Ann Author" });
    expect(typeof git.head.time).toBe("number");
    expect(git.fetched_at).toBeGreaterThan(Date.now() / 1000 - 60);
    expect(git.remote).toEqual({ name: "origin", url: remote });
    // data/ and .env are ignored by the site's .gitignore: nothing changed.
    expect(git.changed).toEqual([]);
  });

  test("after a push: behind 1 once fetched; fetch=0 does not fetch", async () => {
    push("second: a note", { "notes.txt": "hello\n" });
    const skipped = await status("?fetch=0");
    expect(skipped.body!.git).toMatchObject({ fetched: false, fetch_reason: "not asked to (fetch=0)", behind: 0 });
    const r = await status();
    expect(r.body!.git).toMatchObject({ fetched: true, behind: 1, ahead: 0 });
    expect(r.body!.git.fetch_reason).toBeUndefined();
  });

  test("local changes are listed with their state", async () => {
    writeFileSync(join(server.dir, "scratch.txt"), "x");
    const r = await status("?fetch=0");
    expect(r.body!.git.changed).toEqual([{ path: "scratch.txt", state: "untracked" }]);
    rmSync(join(server.dir, "scratch.txt"));
  });
});

describe("git-pull", () => {
  test("a pull that adds a resource: served the moment the pull answers, its table made", async () => {
    const before = head();
    const to = push("third: events", { "resources/events.json": EVENTS });
    expect((await api("GET", "/api/v1/events")).status).toBe(404);
    const r = await pull();
    expect(r.status).toBe(200);
    // The very next request sees the new resource.
    expect((await api("GET", "/api/v1/events")).status).toBe(200);
    const b = r.body!;
    expect(b).toMatchObject({ code: 200, success: true, status: "ok", count: 2 });
    expect(b.pulled).toMatchObject({ from: before, to, branch: "main", upstream: "origin/main", changed: ["notes.txt", "resources/events.json"] });
    expect(b.pulled.commits.map((c: { subject: string }) => c.subject)).toEqual(["second: a note", "third: events"]);
    expect(b.pulled.commits[1]).toEqual({ commit: to, subject: "third: events", author: "Ann Author" });
    expect(b.definitions).toEqual({ added: ["events"], changed: [], removed: [] });
    expect(b.migrations).toContainEqual(expect.objectContaining({ resource: "events", action: "created" }));
    expect(b.restart_needed).toBe(false);
    expect(head()).toBe(to);
    expect((await status()).body!.git).toMatchObject({ behind: 0, ahead: 0 });
  });

  test("already up to date: a success with no commits", async () => {
    const r = await pull();
    expect(r.status).toBe(200);
    expect(r.body!.count).toBe(0);
    expect(r.body!.pulled).toMatchObject({ commits: [], changed: [], from: head(), to: head() });
  });

  test("an invalid definition: 422 naming file and field; nothing moves, the old definitions stay served", async () => {
    const before = head();
    push("bad: an unknown field type", { "resources/events.json": def({ title: { type: "text" }, when: { type: "bogus" } }) });
    const r = await pull();
    expect(r.status).toBe(422);
    expect(r.body).toMatchObject({ message: "INVALID_DATA", file: "resources/events.json", field: "when", refusal: "invalid" });
    expect(r.body!.errors.when).toContain('unknown type "bogus"');
    expect(r.body!.details).toContain("resources/events.json");
    expect(head()).toBe(before);
    expect(readFileSync(join(server.dir, "resources/events.json"), "utf8")).toBe(EVENTS);
    expect((await api("GET", "/api/v1/events")).status).toBe(200);
    const doc = await api("GET", "/api/v1/openapi.json");
    expect(Object.keys(doc.body!.components.schemas["events.record"].properties)).not.toContain("when");
    // Fixed upstream: the next pull takes both commits.
    push("fix: a date", { "resources/events.json": def({ title: { type: "text", required: true }, when: { type: "date" } }) });
    const fixed = await pull();
    expect(fixed.status).toBe(200);
    expect(fixed.body!.pulled.commits.length).toBe(2);
    expect(fixed.body!.definitions).toEqual({ added: [], changed: ["events"], removed: [] });
    expect((await api("POST", "/api/v1/events", { title: "Launch", when: "2030-01-02" })).status).toBe(201);
  });

  test("a schema change the database refuses (a new unique field holding duplicates): 422, rolled back", async () => {
    expect((await api("POST", "/api/v1/events", { title: "Launch" })).status).toBe(201);
    const before = head();
    push("unique titles", { "resources/events.json": def({ title: { type: "text", required: true }, when: { type: "date" } }, { unique: ["title"] }) });
    const r = await pull();
    expect(r.status).toBe(422);
    expect(r.body).toMatchObject({ file: "resources/events.json", field: "title", refusal: "invalid" });
    expect(head()).toBe(before);
    // No unique index was left behind: a third "Launch" is still accepted.
    expect((await api("POST", "/api/v1/events", { title: "Launch" })).status).toBe(201);
    push("no unique titles after all", { "resources/events.json": def({ title: { type: "text", required: true }, when: { type: "date" } }) });
    const ok = await pull();
    expect(ok.status).toBe(200);
    expect(ok.body!.definitions).toEqual({ added: [], changed: [], removed: [] });
  });

  test("extension code: never loaded by a pull, listed with restart_needed; code that does not compile is refused", async () => {
    const before = head();
    push("a broken extension", { "ext/hello.ts": "export default function (api {\n" });
    const bad = await pull();
    expect(bad.status).toBe(422);
    expect(bad.body).toMatchObject({ file: "ext/hello.ts", field: null });
    expect(head()).toBe(before);
    push("the extension fixed", { "ext/hello.ts": "export default function () {}\n" });
    const r = await pull();
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ restart_needed: true, restart_files: ["ext/hello.ts"] });
    expect(r.body!.note).toContain("restart");
  });

  test("local changes in a tracked file the pull changes: 409 with git's words; other local changes stay", async () => {
    const before = head();
    push("news gets a summary", { "resources/news.json": def({ title: { type: "text", required: true }, summary: { type: "textarea" } }) });
    const local = def({ title: { type: "text", required: true }, teaser: { type: "text" } });
    writeFileSync(join(server.dir, "resources/news.json"), local);
    const r = await pull();
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ message: "RESOURCE_EXISTS", refusal: "local-changes", files: ["resources/news.json"] });
    expect(r.body!.details).toContain("news.json");
    expect(head()).toBe(before);
    expect(readFileSync(join(server.dir, "resources/news.json"), "utf8")).toBe(local);
    // Put back; a local change to a file the pull leaves alone does not stop it, and stays.
    gitIn(server.dir, "checkout", "--", "resources/news.json");
    const ignore = "data/\n.env\nscratch/\n";
    writeFileSync(join(server.dir, ".gitignore"), ignore);
    const ok = await pull();
    expect(ok.status).toBe(200);
    expect(ok.body!.definitions).toEqual({ added: [], changed: ["news"], removed: [] });
    expect(readFileSync(join(server.dir, ".gitignore"), "utf8")).toBe(ignore);
    expect((await status("?fetch=0")).body!.git.changed).toEqual([{ path: ".gitignore", state: "modified" }]);
    gitIn(server.dir, "checkout", "--", ".gitignore");
  });

  test("a branch that has diverged: 409, no merge, no rebase", async () => {
    writeFileSync(join(server.dir, "local.txt"), "a local commit\n");
    gitIn(server.dir, "add", "local.txt");
    gitIn(server.dir, "commit", "-q", "-m", "local only");
    const before = head();
    push("upstream moves on", { "notes.txt": "again\n" });
    const s = await status();
    expect(s.body!.git).toMatchObject({ ahead: 1, behind: 1 });
    const r = await pull();
    expect(r.status).toBe(409);
    expect(r.body!.refusal).toBe("diverged");
    expect(r.body!.details).toContain("have diverged");
    expect(head()).toBe(before);
    gitIn(server.dir, "reset", "-q", "--hard", "HEAD~1");
    expect((await pull()).status).toBe(200);
  });

  test("no upstream: status says why, a pull is refused with git's words", async () => {
    gitIn(server.dir, "branch", "--unset-upstream");
    try {
      const s = await status();
      expect(s.body!.git).toMatchObject({ available: true, upstream: null, ahead: null, behind: null, fetched: false, fetch_reason: "the branch has no upstream" });
      expect(s.body!.git.upstream_reason).toContain("no upstream");
      const r = await pull();
      expect(r.status).toBe(409);
      expect(r.body!.refusal).toBe("no-upstream");
      expect(r.body!.details).toContain("no upstream configured");
    } finally {
      gitIn(server.dir, "branch", "--set-upstream-to=origin/main");
    }
  });

  test("credentials in the remote URL are never shown", async () => {
    for (const [url, shown] of [
      ["https://deploy:s3cret-pass@127.0.0.1:9/site.git", "https://deploy:***@127.0.0.1:9/site.git"],
      ["https://s3cret-token@127.0.0.1:9/site.git", "https://***@127.0.0.1:9/site.git"],
    ]) {
      gitIn(server.dir, "remote", "set-url", "origin", url);
      try {
        const s = await status();
        expect(s.status).toBe(200);
        expect(s.body!.git.remote.url).toBe(shown);
        expect(s.body!.git.fetched).toBe(false);
        expect(JSON.stringify(s.body)).not.toContain("s3cret");
        const r = await pull();
        expect(r.status).toBe(502);
        expect(r.body!.details.length).toBeGreaterThan(0);
        expect(JSON.stringify(r.body)).not.toContain("s3cret");
      } finally {
        gitIn(server.dir, "remote", "set-url", "origin", remote);
      }
    }
  });

  test("two pulls at once: one runs, the other gets 409", async () => {
    push("one more", { "notes.txt": "once more\n" });
    // The fetch takes a second, so the second pull arrives while the first runs.
    gitIn(server.dir, "config", "remote.origin.uploadpack", "sleep 1; git-upload-pack");
    try {
      const [a, b] = await Promise.all([pull(), Bun.sleep(200).then(() => pull())]);
      expect([a.status, b.status]).toEqual([200, 409]);
      expect(b.body).toMatchObject({ refusal: "busy" });
      expect(a.body!.pulled.commits.length).toBe(1);
    } finally {
      gitIn(server.dir, "config", "--unset", "remote.origin.uploadpack");
    }
  });
});

describe("who may see and pull", () => {
  test("anonymous: 401, even where a route file opens the resource named git", async () => {
    expect((await call(server.base, "GET", "/api/v1/git")).status).toBe(200);
    expect((await call(server.base, "GET", "/api/v1/git-status")).status).toBe(401);
    expect((await call(server.base, "POST", "/api/v1/git-pull")).status).toBe(401);
  });

  test("a role without view-git: 403 naming it; with view-git only: status, not pull; with pull-git: both", async () => {
    expect((await status("?fetch=0")).status).toBe(200);
    const editor = await api("GET", "/api/v1/git-status?fetch=0", undefined, tokens.editor);
    expect(editor.status).toBe(403);
    expect(editor.body!.needs).toBe("view-git");
    expect((await pull(tokens.editor)).body!.needs).toBe("pull-git");
    expect((await api("GET", "/api/v1/git-status?fetch=0", undefined, tokens.gitviewer)).status).toBe(200);
    const denied = await pull(tokens.gitviewer);
    expect(denied.status).toBe(403);
    expect(denied.body!.needs).toBe("pull-git");
    expect((await api("GET", "/api/v1/git-status?fetch=0", undefined, tokens.deployer)).status).toBe(200);
    expect((await pull(tokens.deployer)).status).toBe(200);
  });

  test("the resources named git and pages, and their permissions, grant nothing here", async () => {
    const t = tokens.lookalike;
    expect((await api("GET", "/api/v1/git", undefined, t)).status).toBe(200);
    expect((await api("GET", "/api/v1/pages", undefined, t)).status).toBe(200);
    expect((await api("GET", "/api/v1/git-status?fetch=0", undefined, t)).status).toBe(403);
    expect((await pull(t)).status).toBe(403);
  });

  test("the OpenAPI document lists each endpoint only for callers who may use it", async () => {
    const paths = async (t: string) => Object.keys((await api("GET", "/api/v1/openapi.json", undefined, t)).body!.paths).filter((p) => p.startsWith("/api/v1/git-"));
    expect(await paths(token)).toEqual(["/api/v1/git-status", "/api/v1/git-pull"]);
    expect(await paths(tokens.deployer)).toEqual(["/api/v1/git-status", "/api/v1/git-pull"]);
    expect(await paths(tokens.gitviewer)).toEqual(["/api/v1/git-status"]);
    expect(await paths(tokens.editor)).toEqual([]);
    expect(await paths(tokens.lookalike)).toEqual([]);
  });

  test("methods other than the endpoint's own: 405", async () => {
    expect((await api("POST", "/api/v1/git-status")).status).toBe(405);
    expect((await api("GET", "/api/v1/git-pull")).status).toBe(405);
  });
});

describe("a site folder that is no git checkout", () => {
  test("status: 200 with available false and git's reason; a pull is refused; without git on the PATH, the same", async () => {
    const dir = makeSite({ defs: { news: JSON.parse(NEWS) } });
    const add = await cli(dir, ["user", "add", "admin@example.com", "--password", "admin-password", "--role", "admin", "--api"]);
    if (add.code !== 0) throw new Error(add.stderr);
    const t = (await cli(dir, ["token", "admin@example.com"])).stdout.trim();
    try {
      const plain = await serve(dir);
      try {
        const s = await call(plain.base, "GET", "/api/v1/git-status", { token: t });
        expect(s.status).toBe(200);
        expect(s.body!.git.available).toBe(false);
        expect(s.body!.git.reason).toContain("not a git repository");
        const p = await call(plain.base, "POST", "/api/v1/git-pull", { token: t });
        expect(p.status).toBe(409);
        expect(p.body!.refusal).toBe("not-a-checkout");
      } finally {
        await plain.stop();
      }
      // No git on the machine: a PATH holding bun alone.
      const bin = join(dir, "bin");
      mkdirSync(bin);
      symlinkSync(process.execPath, join(bin, "bun"));
      const bare = await serve(dir, { env: { PATH: bin } });
      try {
        const s = await call(bare.base, "GET", "/api/v1/git-status", { token: t });
        expect(s.status).toBe(200);
        expect(s.body!.git).toMatchObject({ available: false });
        expect(s.body!.git.reason).toContain("git is not installed");
      } finally {
        await bare.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

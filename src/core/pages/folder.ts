/**
 * The folder of a route file, opened for writing without ever following a symbolic link out of
 * DIR/ext/uri, even while someone swaps folders for links (docs/editing.md "Pages").
 *
 * Each folder on the way is created (when asked) and opened one component at a time, relative to
 * the folder opened before it, with O_NOFOLLOW: a component that is a symbolic link is refused
 * (400), one that is a file is a conflict (409). On Linux every later step names its target through
 * `/proc/self/fd/<folder>/<name>`, so it acts on the folder that was opened and checked, whatever
 * its path leads to by then; the temporary file is opened with O_CREAT|O_EXCL|O_NOFOLLOW there and
 * renamed into place there. Elsewhere the same steps go by path, and the chain of folders is checked
 * again (no link, same inode, real path inside) right before the rename or removal.
 */
import { closeSync, constants as C, existsSync, fstatSync, lstatSync, mkdirSync, openSync, realpathSync, renameSync, rmdirSync, rmSync, unlinkSync, writeSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { badRequest, conflict } from "../errors";
import { folderOf, ROUTE_FILE, routesRoot } from "./paths";

const PROC = process.platform === "linux" && existsSync("/proc/self/fd");
const DIR_FLAGS = C.O_RDONLY | (C.O_DIRECTORY ?? 0) | (C.O_NOFOLLOW ?? 0);

type Step = { name: string; fd: number; path: string; dev: number; ino: number };

const code = (e: unknown) => (e as NodeJS.ErrnoException).code;

export class RouteFolder {
  private constructor(
    private readonly url: string,
    /** The routes root, then one step per URL segment. */
    private readonly steps: Step[],
    /** How many folders (the deepest of the chain) this open created. */
    readonly made: number,
  ) {}

  /**
   * Opens the folder of `url`'s route file. `create`: makes the missing folders; otherwise answers
   * null when one is missing. Refuses a symbolic link on the way (400) or a file where a folder
   * should be (409); folders made before a refusal are removed again.
   */
  static open(dir: string, url: string, create: boolean): RouteFolder | null {
    const root = routesRoot(dir);
    if (create) mkdirSync(root, { recursive: true });
    let fd: number;
    try {
      fd = openSync(root, C.O_RDONLY | (C.O_DIRECTORY ?? 0)); // DIR/ext/uri itself may be a link: the site's choice
    } catch (e) {
      if (!create && code(e) === "ENOENT") return null;
      throw e;
    }
    const st = fstatSync(fd);
    const steps: Step[] = [{ name: "", fd, path: realpathSync(root), dev: st.dev, ino: st.ino }];
    let made = 0;
    const shown = (i: number) => `ext/uri/${folderOf(url).split("/").slice(0, i).join("/")}`;
    try {
      const segs = url === "/" ? [] : folderOf(url).split("/");
      for (const [i, name] of segs.entries()) {
        const parent = steps.at(-1)!;
        const at = RouteFolder.at(parent, name);
        if (create) {
          try {
            mkdirSync(at);
            made++;
          } catch (e) {
            if (code(e) !== "EEXIST") throw e;
          }
        }
        let sub: number;
        try {
          sub = openSync(at, DIR_FLAGS);
        } catch (e) {
          const c = code(e);
          if (c === "ENOENT" && !create) {
            RouteFolder.closeAll(steps);
            return null;
          }
          if (c === "ELOOP" || c === "ENOTDIR" || c === "EMLINK") {
            let link = false;
            try {
              link = lstatSync(at).isSymbolicLink();
            } catch {
              // gone again: say what was there when we looked
            }
            if (link || c !== "ENOTDIR") throw badRequest(`url ${url}: ${shown(i + 1)} is a symbolic link; route files are written only into real folders inside DIR/ext/uri`);
            throw conflict(`${shown(i + 1)} is a file, so ${url} cannot have a route file`);
          }
          throw e;
        }
        const s = fstatSync(sub);
        steps.push({ name, fd: sub, path: join(parent.path, name), dev: s.dev, ino: s.ino });
      }
      const folder = new RouteFolder(url, steps, made);
      if (!PROC) folder.verify();
      return folder;
    } catch (e) {
      new RouteFolder(url, steps, made).close(made);
      throw e;
    }
  }

  private static at(step: Step, name: string): string {
    return PROC ? `/proc/self/fd/${step.fd}/${name}` : join(step.path, name);
  }

  private static closeAll(steps: Step[]): void {
    for (const s of steps) {
      try {
        closeSync(s.fd);
      } catch {
        // closed already
      }
    }
  }

  private get leaf(): Step {
    return this.steps.at(-1)!;
  }

  /** The path of `name` in this folder, for the file system calls. */
  path(name: string): string {
    return RouteFolder.at(this.leaf, name);
  }

  /**
   * Without /proc: every folder of the chain is still a folder (no link), the same one that was
   * opened, and its real path is inside DIR/ext/uri. With /proc the calls act on the opened folders
   * themselves, so there is nothing to check.
   */
  verify(): void {
    if (PROC) return;
    const root = this.steps[0].path;
    for (const s of this.steps.slice(1)) {
      const st = lstatSync(s.path, { throwIfNoEntry: false });
      if (!st || st.isSymbolicLink() || !st.isDirectory() || st.ino !== s.ino || st.dev !== s.dev) {
        throw conflict(`the folders of ${this.url} changed while it was written (a folder was moved or replaced by a link); nothing was written`);
      }
    }
    const rel = relative(root, realpathSync(this.leaf.path));
    if (rel.startsWith("..") || rel.startsWith(sep)) throw badRequest(`url ${this.url} would land outside DIR/ext/uri through a symbolic link`);
  }

  /** Is there something other than a regular file where the route file goes? Then 409. */
  checkFileSlot(): void {
    const st = lstatSync(this.path(ROUTE_FILE), { throwIfNoEntry: false });
    if (!st || st.isFile()) return;
    const what = st.isDirectory() ? "a folder" : st.isSymbolicLink() ? "a symbolic link" : "not a file";
    throw conflict(`ext/uri/${join(folderOf(this.url), ROUTE_FILE).split(sep).join("/")} is ${what}, so ${this.url} cannot have a route file there; move it away first`);
  }

  /** Writes `text` to a new file `name` here (O_EXCL, O_NOFOLLOW: never an existing file or a link). */
  writeNew(name: string, text: string): void {
    const fd = openSync(this.path(name), C.O_WRONLY | C.O_CREAT | C.O_EXCL | (C.O_NOFOLLOW ?? 0), 0o644);
    try {
      const buf = Buffer.from(text, "utf8");
      for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off, buf.length - off);
    } finally {
      closeSync(fd);
    }
  }

  /** Renames `from` to `to` within this folder, checked right before. */
  rename(from: string, to: string): void {
    this.verify();
    renameSync(this.path(from), this.path(to));
  }

  unlink(name: string): void {
    this.verify();
    unlinkSync(this.path(name));
  }

  removeQuietly(name: string): void {
    try {
      rmSync(this.path(name), { force: true });
    } catch {
      // nothing to remove
    }
  }

  /**
   * Closes the folders, first removing up to `prune` of the chain's deepest folders while they are
   * empty (never DIR/ext/uri itself) — each by its name in the folder opened above it. A refusal
   * prunes the folders its open made; a delete every empty one (`Infinity`).
   */
  close(prune = 0): void {
    for (let i = this.steps.length - 1, n = 0; i >= 1 && n < prune; i--, n++) {
      try {
        rmdirSync(RouteFolder.at(this.steps[i - 1], this.steps[i].name));
      } catch {
        break; // not empty (or gone): the folders above are not empty either
      }
    }
    RouteFolder.closeAll(this.steps);
  }
}

/**
 * Which servers use a site: each `resd serve` writes DIR/data/run/<pid>.pid while it runs. Commands
 * that would pull the database out from under a server (`resd restore --force`) ask first; a server
 * keeps its open database file, so every write it acknowledged afterwards would be lost.
 */
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const runDir = (dir: string) => join(dir, "data", "run");

/** Marks this process as a server of `dir`; the returned function removes the mark. */
export function claimPidFile(dir: string): () => void {
  mkdirSync(runDir(dir), { recursive: true, mode: 0o700 });
  const file = join(runDir(dir), `${process.pid}.pid`);
  writeFileSync(file, `${process.pid}\n`, { mode: 0o600 });
  return () => rmSync(file, { force: true });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: the process exists but belongs to someone else.
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** PIDs of the live servers of `dir`; marks left by a server that died are removed. */
export function runningServers(dir: string): number[] {
  if (!existsSync(runDir(dir))) return [];
  const pids: number[] = [];
  for (const name of readdirSync(runDir(dir))) {
    const m = /^(\d+)\.pid$/.exec(name);
    if (!m) continue;
    const pid = Number(m[1]);
    if (pid !== process.pid && alive(pid)) pids.push(pid);
    else if (pid !== process.pid) rmSync(join(runDir(dir), name), { force: true });
  }
  return pids;
}

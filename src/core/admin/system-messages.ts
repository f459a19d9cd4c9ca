/**
 * `GET /api/v1/.system-messages`: what an administrator should act on — definitions the running
 * server rejected, jobs that ran out of attempts, a disk filling up. Only for callers holding
 * `(all)`; everyone else gets an empty list (the pages ask on every start).
 */
import { statfsSync } from "node:fs";
import { hasPermission, type Principal } from "../access/permissions";
import type { Site } from "../site";
import { loadAgents } from "../agents/definitions";

export type SystemMessage = { level: "error" | "warning"; topic: "definitions" | "agents" | "jobs" | "disk"; text: string; at: number };

/** Below either bound the disk is reported. */
const DISK_MIN_FREE_BYTES = 1024 ** 3;
const DISK_MIN_FREE_SHARE = 0.05;

export async function systemMessages(site: Site, p: Principal): Promise<SystemMessage[]> {
  if (!hasPermission(p, "(all)")) return [];
  const out: SystemMessage[] = [];
  const now = Date.now();
  if (site.reloadFailure) {
    out.push({ level: "error", topic: "definitions", at: site.reloadFailure.at, text: `resources/ was changed but not loaded; the previous definitions stay in force: ${site.reloadFailure.message}` });
  }
  for (const { file, message } of loadAgents(site).problems) {
    out.push({ level: "error", topic: "agents", at: now, text: `${file} is not a valid agent and is not offered: ${message}` });
  }
  const dead = await site.store.jobs.list({ state: "dead", limit: 100 });
  if (dead.length) {
    const types = [...new Set(dead.map((j) => j.type))].join(", ");
    out.push({ level: "error", topic: "jobs", at: dead[0].updated, text: `${dead.length === 100 ? "100 or more" : dead.length} job(s) ran out of attempts (${types}); see \`resd jobs list --state dead\`, retry with \`resd jobs retry ID\`` });
  }
  const fs = statfsSync(site.config.dir);
  const free = fs.bavail * fs.bsize;
  const share = fs.blocks ? fs.bavail / fs.blocks : 1;
  if (free < DISK_MIN_FREE_BYTES || share < DISK_MIN_FREE_SHARE) {
    out.push({ level: "warning", topic: "disk", at: now, text: `${(free / 1024 ** 2).toFixed(0)} MiB free (${(share * 100).toFixed(1)} %) on the disk of ${site.config.dir}` });
  }
  return out;
}

/**
 * What revising cached answers costs a commit: about 500 cached pages (4 statuses x 2 orders x 50
 * offsets, and a page per year), then 300 single creates; the time spent in the store's revise step
 * per commit. Run after bench/records/mixed.sh prepared /tmp/bench-data (it copies the site first):
 *
 *   bun bench/records/revise-cost.ts
 */
import { cpSync, rmSync } from "node:fs";
import { loadConfig } from "../../src/core/config";
import { openSite } from "../../src/core/open-site";
import { createRecord, listRecords } from "../../src/core/records/service";
import { SYSTEM } from "../../src/core/access/permissions";

const DATA = process.env.BENCH_DATA ?? "/tmp/bench-data";
const dir = `${DATA}/resd-site`;
rmSync(dir, { recursive: true, force: true });
cpSync(`${DATA}/resd-site.orig`, dir, { recursive: true });
const site = await openSite({ ...loadConfig({ dir }), port: 0, host: "127.0.0.1" });
// The revise step is private: timed by wrapping it on this instance only.
const store = site.store as unknown as { revise: (w: unknown) => void; memoBytes(): number };
const revise = store.revise.bind(store);
let ms = 0;
let commits = 0;
store.revise = (w) => {
  const t0 = performance.now();
  revise(w);
  ms += performance.now() - t0;
  commits++;
};
const statuses = ["new", "open", "done", "draft"];
for (let round = 1; round <= 3; round++) {
  for (const s of statuses) for (const sort of ["year|numeric|desc", "year|numeric|asc"]) for (let o = 0; o < 50; o++)
    await listRecords(site, SYSTEM, "items", { limit: "20", offset: String(o * 20), sort, filter: `status:${s}` });
  for (let y = 1950; y < 2026; y++) await listRecords(site, SYSTEM, "items", { limit: "20", sort: "title", filter: `year:${y}` });
  ms = 0;
  commits = 0;
  for (let i = 0; i < 300; i++) await createRecord(site, SYSTEM, "items", { title: `revise ${i}`, year: 1950 + (i % 76), status: statuses[i % 4] });
  console.log(`round ${round}: revising took ${((ms * 1000) / commits).toFixed(0)} µs per commit (${commits} commits; memo ${store.memoBytes()} bytes)`);
}
await site.close();

/**
 * GET one without HTTP: resd's in-place read (readOneNow) beside a bare bun:sqlite handler of the
 * same answer, and one record read with and without the memory mapping, each over 10,000 random
 * records. Run after bench/records/mixed.sh prepared /tmp/bench-data (it copies the site first):
 *
 *   bun bench/records/get-one-inprocess.ts
 */
import { Database } from "bun:sqlite";
import { cpSync, rmSync } from "node:fs";
import { loadConfig } from "../../src/core/config";
import { openSite } from "../../src/core/open-site";
import { tokenForEmail } from "../../src/core/accounts";
import { readOneNow, readOneRoute } from "../../src/http/records";

const DATA = process.env.BENCH_DATA ?? "/tmp/bench-data";
const dir = `${DATA}/resd-site`;
rmSync(dir, { recursive: true, force: true });
cpSync(`${DATA}/resd-site.orig`, dir, { recursive: true });
const site = await openSite({ ...loadConfig({ dir }), port: 0, host: "127.0.0.1" });
const { token } = await tokenForEmail(site, "bench@example.com");
const sample = (db: Database, table: string) =>
  (db.query(`SELECT uuid FROM ${table} ORDER BY random() LIMIT 10000`).all() as { uuid: string }[]).map((r) => r.uuid);
const uuids = sample(new Database(`${dir}/data/resd.db`, { readonly: true }), `"r:items"`);
const requests = uuids.map((u) => new Request(`http://127.0.0.1/api/v1/items/${u}`, { headers: { authorization: `Bearer ${token}` } }));
await readOneRoute(site, requests[0], "items", uuids[0]); // the token's first check, on the general path

const bare = new Database(`${DATA}/raw.db`, { readonly: true });
bare.exec("PRAGMA cache_size=-262144; PRAGMA mmap_size=1073741824;");
const bareUuids = sample(bare, "records");
const bareRequests = bareUuids.map((u) => new Request(`http://127.0.0.1/api/v1/items/${u}`, { headers: { authorization: "Bearer bench" } }));
const getOne = bare.prepare("SELECT uuid, data, _created, _modified FROM records WHERE uuid = ?");
type Row = { uuid: string; data: string; _created: number; _modified: number };
const bareAnswer = (req: Request, uuid: string) => {
  if (req.headers.get("authorization") !== "Bearer bench") return null;
  const r = getOne.get(uuid) as Row;
  const items = { [r.uuid]: { ...JSON.parse(r.data), uuid: r.uuid, _created: r._created, _modified: r._modified } };
  return Response.json({ code: 200, success: true, status: "ok", count: 1, items }, { status: 200 });
};

const N = 200_000;
const perCall = (fn: (k: number) => unknown) => {
  const t0 = performance.now();
  for (let i = 0; i < N; i++) fn(i % 10_000);
  return ((performance.now() - t0) * 1000) / N;
};
for (let round = 1; round <= 3; round++) {
  const resd = perCall((k) => {
    if (!readOneNow(site, requests[k], "items", uuids[k])) throw new Error("not answered in place");
  });
  const ref = perCall((k) => bareAnswer(bareRequests[k], bareUuids[k]));
  console.log(`round ${round}: readOneNow ${resd.toFixed(2)} µs, bare handler ${ref.toFixed(2)} µs per answer`);
}
const writer = (site.store as unknown as { writer: Database }).writer;
for (const bytes of [0, 256 * 1024 * 1024]) {
  writer.exec(`PRAGMA mmap_size=${bytes}`);
  perCall((k) => site.store.now!.get("items", uuids[k]));
  console.log(`mmap_size ${bytes}: one record read ${perCall((k) => site.store.now!.get("items", uuids[k])).toFixed(2)} µs`);
}
await site.close();

// In-process cost of authentication + permission check per request (no HTTP): bearer token vs an
// anonymous caller opened by an allow file. Run after bench/records/run.sh seeded the site.
//   bun bench/records/auth-inprocess.ts [SITE_DIR]
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadConfig } from "../../src/core/config";
import { openSite } from "../../src/core/open-site";
import { authenticate } from "../../src/http/auth";
import { authorize } from "../../src/core/access/permissions";
import { tokenForEmail } from "../../src/core/accounts";

const dir = process.argv[2] ?? "/tmp/bench-data/resd-site";
const allow = join(dir, "ext/uri/api/v1/items");
mkdirSync(allow, { recursive: true });
writeFileSync(join(allow, "index.tpl"), "[#api-allow get items#]\n");
const site = await openSite(loadConfig({ dir }));
const { token } = await tokenForEmail(site, "bench@example.com");
const N = 300_000;
async function time(label: string, headers: Record<string, string>) {
  const reqs = Array.from({ length: 64 }, () => new Request("http://x/api/v1/items/abc", { headers }));
  for (let i = 0; i < 20_000; i++) authorize(await authenticate(site, reqs[i % 64]), "items", "view", "abc");
  const t0 = performance.now();
  for (let i = 0; i < N; i++) authorize(await authenticate(site, reqs[i % 64]), "items", "view", "abc");
  const us = ((performance.now() - t0) * 1000) / N;
  console.log(`${label.padEnd(12)} ${us.toFixed(2)} µs per request`);
  return us;
}
const bearer = await time("bearer", { authorization: `Bearer ${token}` });
const anon = await time("anonymous", {});
console.log(`difference ${(bearer - anon).toFixed(2)} µs per request`);
rmSync(join(dir, "ext"), { recursive: true, force: true });
await site.close();

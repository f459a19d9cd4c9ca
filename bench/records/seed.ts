// Seeds a resd site with N synthetic records of the shared bench shape {title, year, status, body},
// through the core store in batches (an API seed of a million records would measure the seeder).
// The same generator as ../shared/bench/seed-api.mjs, so figures are comparable with bare-resd.
//   bun bench/records/seed.ts SITE_DIR [COUNT]
import { mkdirSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { loadConfig } from "../../src/core/config";
import { openSite } from "../../src/core/open-site";

const dir = process.argv[2] ?? "/tmp/bench-data/resd-site";
const count = Number(process.argv[3] ?? 1_000_000);
const STATUSES = ["new", "open", "done", "draft"];
mkdirSync(join(dir, "resources"), { recursive: true });
const defFile = join(dir, "resources/items.json");
if (!existsSync(defFile)) {
  writeFileSync(defFile, JSON.stringify({
    fields: {
      title: { type: "text", required: true },
      year: { type: "number" },
      status: { type: "select", options: { new: "New", open: "Open", done: "Done", draft: "Draft" } },
      body: { type: "textarea" },
    },
    index: ["status,year", "year"],
  }, null, 2));
}
const site = await openSite(loadConfig({ dir }));
const have = await site.store.count("items", { where: "", args: [] });
const t0 = performance.now();
const BATCH = 10_000;
for (let b = have; b < count; b += BATCH) {
  await site.store.transaction(async (tx) => {
    for (let i = b; i < Math.min(count, b + BATCH); i++) {
      const now = 1_700_000_000 + i;
      const rec = { title: `Record number ${i}`, year: 1950 + ((i * 7919) % 76), status: STATUSES[(i * 31) % 4], body: `Some body text for record ${i}, long enough to look like a short description.` };
      await tx.insert("items", { uuid: crypto.randomUUID(), data: JSON.stringify(rec), _created: now, _modified: now, _created_by: null, _modified_by: null });
    }
  });
}
console.log(`seeded ${count - have} records in ${((performance.now() - t0) / 1000).toFixed(1)} s (total ${await site.store.count("items", { where: "", args: [] })})`);
await site.close();

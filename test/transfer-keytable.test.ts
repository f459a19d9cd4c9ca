import { expect, test } from "bun:test";
import { KeyTable } from "../src/core/transfer/keytable";
test("keytable", () => {
  const t = new KeyTable(); const m = new Map<string,string>();
  for (let i = 0; i < 50000; i++) { const u = i % 3 ? crypto.randomUUID() : `id-${i}`; t.set(`k${i}`, u); m.set(`k${i}`, u); }
  t.set("k1", "other");
  for (const [k, v] of m) expect(t.get(k)).toBe(v);
  expect(t.get("nope")).toBeUndefined();
  expect(t.size).toBe(50000);
});

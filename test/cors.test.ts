import { afterAll, beforeAll, expect, test } from "bun:test";
import { adminSite } from "./helpers/site";

let s: Awaited<ReturnType<typeof adminSite>>;
beforeAll(async () => { s = await adminSite({ defs: { notes: { fields: { title: { type: "text" } } } }, env: { RESD_CORS_ORIGINS: "https://app.example.com" } }); });
afterAll(async () => { await s.cleanup(); });

test("a preflight from an allowed origin is answered; others are refused", async () => {
  const ok = await fetch(`${s.base}/api/v1/notes`, { method: "OPTIONS", headers: { origin: "https://app.example.com", "access-control-request-method": "POST", "access-control-request-headers": "authorization, content-type" } });
  expect(ok.status).toBe(204);
  expect(ok.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
  expect(ok.headers.get("access-control-allow-headers")).toContain("authorization");
  expect(ok.headers.get("access-control-allow-credentials")).toBeNull();
  const bad = await fetch(`${s.base}/api/v1/notes`, { method: "OPTIONS", headers: { origin: "https://evil.example", "access-control-request-method": "POST" } });
  expect(bad.status).toBe(403);
  expect(bad.headers.get("access-control-allow-origin")).toBeNull();
});

test("answers to an allowed origin carry the CORS headers; others do not", async () => {
  const r = await s.api("GET", "/api/v1/notes", undefined, { origin: "https://app.example.com" });
  expect(r.status).toBe(200);
  expect(r.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
  expect(r.headers.get("access-control-expose-headers")).toContain("last-modified");
  const other = await s.api("GET", "/api/v1/notes", undefined, { origin: "https://evil.example" });
  expect(other.headers.get("access-control-allow-origin")).toBeNull();
});

test("without the setting there is no CORS at all", async () => {
  const { withCors } = await import("../src/http/cors");
  const inner = async () => new Response("x");
  expect(withCors("", inner)).toBe(inner);
});

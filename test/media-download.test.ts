/** Black-box: /download/{uuid} — bytes, headers, ETag/304, ranges, and markup kept out of our origin. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { adminSite } from "./helpers/site";
import { upload } from "./helpers/media";

type S = Awaited<ReturnType<typeof adminSite>>;
/** JSON answers, checked field by field. */
type Envelope = Record<string, any>;

let s: S;
let big: Uint8Array;
let bigId: string;
beforeAll(async () => {
  s = await adminSite();
  // 3 MiB of varied bytes (several multipart and read chunks), with a PDF signature in front.
  big = new Uint8Array(3 * 1024 * 1024 + 17);
  for (let i = 0; i < big.length; i++) big[i] = (i * 2654435761) >>> 24;
  big.set(new TextEncoder().encode("%PDF-1.4\n"), 0);
  bigId = await upload(s, big, "Jahresbericht Größe 2026.pdf", "application/pdf");
});
afterAll(() => s.cleanup());

describe("download", () => {
  test("the bytes as uploaded, with type, name (RFC 6266), ETag and nosniff", async () => {
    const res = await fetch(`${s.base}/download/${bigId}`);
    expect(res.status).toBe(200);
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(new Uint8Array(big));
    expect(res.headers.get("content-type")).toBe("application/pdf");
    expect(res.headers.get("content-length")).toBe(String(big.length));
    expect(res.headers.get("content-disposition")).toBe(
      `inline; filename="Jahresbericht Gr__e 2026.pdf"; filename*=UTF-8''Jahresbericht%20Gr%C3%B6%C3%9Fe%202026.pdf`,
    );
    expect(res.headers.get("etag")).toBe(`"${bigId}"`);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("accept-ranges")).toBe("bytes");
  });

  test("If-None-Match with the ETag: 304 without a body", async () => {
    const res = await fetch(`${s.base}/download/${bigId}`, { headers: { "if-none-match": `W/"x", "${bigId}"` } });
    expect(res.status).toBe(304);
    expect(await res.text()).toBe("");
    expect((await fetch(`${s.base}/download/${bigId}`, { headers: { "if-none-match": `"other"` } })).status).toBe(200);
  });

  test("ranges: 206 with Content-Range; open and suffix ranges; 416 past the end", async () => {
    let res = await fetch(`${s.base}/download/${bigId}`, { headers: { range: "bytes=1000-1999" } });
    expect(res.status).toBe(206);
    expect(res.headers.get("content-range")).toBe(`bytes 1000-1999/${big.length}`);
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(big.slice(1000, 2000));

    res = await fetch(`${s.base}/download/${bigId}`, { headers: { range: `bytes=${big.length - 10}-` } });
    expect(res.status).toBe(206);
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(big.slice(big.length - 10));

    res = await fetch(`${s.base}/download/${bigId}`, { headers: { range: "bytes=-5" } });
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(big.slice(big.length - 5));

    res = await fetch(`${s.base}/download/${bigId}`, { headers: { range: `bytes=${big.length}-` } });
    expect(res.status).toBe(416);
    expect(res.headers.get("content-range")).toBe(`bytes */${big.length}`);
  });

  test("If-Range with another validator sends the whole file", async () => {
    const res = await fetch(`${s.base}/download/${bigId}`, { headers: { range: "bytes=0-9", "if-range": `"stale"` } });
    expect(res.status).toBe(200);
    expect((await res.arrayBuffer()).byteLength).toBe(big.length);
    const ok = await fetch(`${s.base}/download/${bigId}`, { headers: { range: "bytes=0-9", "if-range": `"${bigId}"` } });
    expect(ok.status).toBe(206);
  });

  test("SVG and HTML are attachments in a script-less sandbox", async () => {
    const svg = await upload(s, new TextEncoder().encode(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`), "x.svg", "image/svg+xml");
    const html = await upload(s, new TextEncoder().encode(`<!doctype html><script>alert(document.cookie)</script>`), "x.png", "image/png");
    for (const [uuid, type] of [[svg, "image/svg+xml"], [html, "text/html"]]) {
      const res = await fetch(`${s.base}/download/${uuid}`);
      expect(res.headers.get("content-type")).toBe(type);
      expect(res.headers.get("content-disposition")!.startsWith("attachment;")).toBe(true);
      expect(res.headers.get("content-security-policy")).toContain("sandbox");
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    }
  });

  test("unknown uuid: 404", async () => {
    expect((await fetch(`${s.base}/download/${"a".repeat(32)}`)).status).toBe(404);
    expect((await fetch(`${s.base}/download/..%2F..%2Fetc%2Fpasswd`)).status).toBe(404);
  });
});

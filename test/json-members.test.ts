/** The JSON splitter behind streamed JSON imports: members out of any chunking, structure errors named. */
import { describe, expect, test } from "bun:test";
import { JsonMembers, type JsonMember } from "../src/core/transfer/json-members";

function split(pieces: string[], descend?: (key: string) => boolean): JsonMember[] {
  const out: JsonMember[] = [];
  const s = new JsonMembers((m) => out.push(m), descend);
  for (const p of pieces) s.push(p);
  s.end();
  return out;
}

const tricky = JSON.stringify({
  _meta: { fields: { t: { type: "text" } } },
  "k\"ey\\": { t: "a \"quoted\" } ] , value \\", n: [1, { x: "}" }], u: "ünï ✓ 日本 \u0001" },
  plain: { t: "\\\\" },
  scalar: -12.5e3,
  nothing: null,
  list: [true, false, [], {}],
});

describe("JsonMembers", () => {
  test("the same members whatever the chunk boundaries (every split point, and one character at a time)", () => {
    const whole = split([tricky]);
    expect(whole.map((m) => m.key)).toEqual(["_meta", "k\"ey\\", "plain", "scalar", "nothing", "list"]);
    expect(Object.fromEntries(whole.map((m) => [m.key, JSON.parse(m.text)]))).toEqual(JSON.parse(tricky));
    for (let at = 1; at < tricky.length; at++) expect(split([tricky.slice(0, at), tricky.slice(at)])).toEqual(whole);
    expect(split([...tricky])).toEqual(whole);
  });

  test("a list gives its items with a null key; whitespace and a BOM are fine", () => {
    const out = split(["\ufeff [ {\"a\":1} ,\n 2 ,\"s\", [3] ]\n"]);
    expect(out.map((m) => [m.key, JSON.parse(m.text)])).toEqual([[null, { a: 1 }], [null, 2], [null, "s"], [null, [3]]]);
    expect(split(["[]"])).toEqual([]);
    expect(split(["{}"])).toEqual([]);
  });

  test("descends into one object when asked (an API answer), at depth 2", () => {
    const doc = JSON.stringify({ code: 200, success: true, notes: { a: { t: 1 }, b: { t: 2 } }, total: 2 });
    const out = split([doc], (k) => k === "notes");
    expect(out.map((m) => [m.depth, m.key])).toEqual([[1, "code"], [1, "success"], [2, "a"], [2, "b"], [1, "total"]]);
  });

  test("broken structure is refused with where it broke", () => {
    const bad = (text: string) => {
      try {
        split([text]);
      } catch (e) {
        return (e as Error & { details?: string }).details ?? (e as Error).message;
      }
      return "accepted";
    };
    expect(bad('{"a": {"b": 1}')).toContain("ends too early");
    expect(bad('[{"a": "unterminated}]')).toContain("ends too early");
    expect(bad('{"a": 1,}')).toContain("a key expected");
    expect(bad("[1,]")).toContain("a value expected");
    expect(bad('{"a" 1}')).toContain("':' expected");
    // Inside a value only the brackets and strings are the splitter's: "1 2" is one value, which
    // its reader (JSON.parse of the member) then refuses as a row of its own.
    expect(split(["[1 2]"]).map((m) => m.text)).toEqual(["1 2"]);
    expect(bad('{"a": 1]')).toContain("mismatched bracket");
    expect(bad("[1] [2]")).toContain("text follows its end");
    expect(bad("5")).toContain("a list of records or an object of records");
  });
});

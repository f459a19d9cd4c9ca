import { describe, expect, test } from "bun:test";
import { exportFilename, fromCell, guardCell, sniffFormat, toCell, unguardCell } from "../src/core/transfer/format";

describe("formula guard", () => {
  const cases: [string, string][] = [
    ["=SUM(A1:A2)", "'=SUM(A1:A2)"],
    ["+1", "'+1"],
    ["-x", "'-x"],
    ["@cmd", "'@cmd"],
    ["\tlead", "'\tlead"],
    ["\rlead", "'\rlead"],
    ["'=already", "''=already"],
    ["''+two", "'''+two"],
    ["'plain", "'plain"],
    ["plain", "plain"],
    ["a=b", "a=b"],
    ["", ""],
  ];
  test.each(cases)("%p is exported as %p and imported back", (value, cell) => {
    expect(guardCell(value)).toBe(cell);
    expect(unguardCell(cell)).toBe(value);
  });
  test("the import removes exactly one apostrophe, and only before a formula character", () => {
    expect(unguardCell("'=x")).toBe("=x");
    expect(unguardCell("''=x")).toBe("'=x");
    expect(unguardCell("'x")).toBe("'x");
  });
});

describe("cells", () => {
  const text = { type: "text" as const };
  const multi = { type: "text" as const, multi: true };
  const i18n = { type: "text" as const, i18n: true };
  test("scalars, lists and objects", () => {
    expect(toCell(text, null)).toBe("");
    expect(toCell(text, undefined)).toBe("");
    expect(toCell({ type: "number" }, -5)).toBe(-5); // numbers are not text: no guard
    expect(toCell(text, "-5")).toBe("'-5");
    expect(toCell(multi, ["a", "=b"])).toBe('["a","=b"]');
    expect(toCell(i18n, { en: "Hi", de: "Hallo" })).toBe('{"en":"Hi","de":"Hallo"}');
    expect(fromCell(multi, '["a","=b"]')).toEqual(["a", "=b"]);
    expect(fromCell(multi, "single")).toBe("single");
    expect(fromCell(i18n, '{"en":"Hi"}')).toEqual({ en: "Hi" });
    expect(fromCell(text, '["not","parsed"]')).toBe('["not","parsed"]');
    expect(fromCell(text, "")).toBeNull();
    expect(fromCell(text, "'-5")).toBe("-5");
  });
});

describe("format detection", () => {
  test("content first, then the name", () => {
    expect(sniffFormat('{"_meta":{}}', "x.csv")).toBe("json");
    expect(sniffFormat("\uFEFF  [1]", "x.txt")).toBe("json");
    expect(sniffFormat("title\tyear\nA\t1", "data.csv")).toBe("tsv");
    expect(sniffFormat("title,year\nA,1", "data.tsv")).toBe("csv");
    expect(sniffFormat("title\nA", "data.tsv")).toBe("tsv");
    expect(sniffFormat("title\nA", "upload")).toBe("csv");
  });
  test("download name from the resource and the date", () => {
    expect(exportFilename("notes", "csv", new Date("2026-11-22T10:00:00Z"))).toBe("notes-2026-11-22.csv");
  });
});

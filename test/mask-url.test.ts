/** A database URL's password never reaches output, however the URL is spelled (or misspelled). */
import { expect, test } from "bun:test";
import { maskUrl } from "../src/core/config";
import { cli, makeSite } from "./helpers/site";

const cases: [string, string][] = [
  ["postgres://u:secretpw@host:5432/db", "postgres://u:***@host:5432/db"],
  ["postgres://atkuser:p@ss:w/rd%x@127.0.0.1:55432/atk_f", "postgres://atkuser:***@127.0.0.1:55432/atk_f"],
  ["postgres://u:SECRET@pw@host/db", "postgres://u:***@host/db"],
  ["postgres:/u:SECRETpw@host/db", "postgres:/u:***@host/db"],
  ["postgres//u:SECRETpw@host/db", "postgres//u:***@host/db"],
  [" postgres://u:SECRETpw@host/db", " postgres:***@host/db"],
  ["postgres://host/db?user=u&password=SECRETpw&sslmode=require", "postgres://host/db?user=u&password=***&sslmode=require"],
  ["mysql://root:SECRETpw@db/x", "mysql://root:***@db/x"],
  ["postgres://nobody@host/db", "postgres://nobody@host/db"],
  ["sqlite", "sqlite"],
];

test("maskUrl hides the password of well-formed and malformed URLs alike", () => {
  for (const [url, shown] of cases) {
    expect(maskUrl(url)).toBe(shown);
    expect(maskUrl(url)).not.toMatch(/SECRET|secretpw|p@ss/);
  }
});

test("an invalid RESD_DATABASE_URL is refused at start without showing its password", async () => {
  const dir = makeSite({ store: "sqlite" });
  for (const url of ["postgres://atkuser:p@ss:w/rd%x@127.0.0.1:1/x y", "mysql://u:SECRETpw@h/x", "postgres:/u:SECRETpw@h/x"]) {
    const r = await cli(dir, ["config"], { env: { RESD_DATABASE_URL: url } });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("invalid value for databaseUrl");
    expect(r.stderr).not.toMatch(/SECRETpw|p@ss/);
  }
  const flag = await cli(dir, ["serve", "--port", "0", "--database-url", "mysql://u:SECRETpw@h/x"]);
  expect(flag.code).toBe(2);
  expect(flag.stderr).not.toContain("SECRETpw");
  const query = await cli(dir, ["config"], { env: { RESD_DATABASE_URL: "postgres://h/db?password=SECRETpw" } });
  expect(query.stdout).toContain("password=***");
  expect(query.stdout).not.toContain("SECRETpw");
});

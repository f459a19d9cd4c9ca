/**
 * axe-core in a page of the admin: the accessibility rules every screen is held to. The script is
 * evaluated through DevTools (page.evaluate), which the admin's Content-Security-Policy does not
 * govern, so the page needs no exception for it.
 */
import type { Page } from "playwright-core";

const source = await Bun.file(require.resolve("axe-core/axe.min.js")).text();

export type AxeViolation = { id: string; impact: string | null; help: string; nodes: { target: string[]; failureSummary?: string }[] };

/** The violations axe finds in the page as it is now (WCAG 2.x A and AA, and best practices). */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  if (!(await page.evaluate("typeof window.axe === 'object'"))) await page.evaluate(source);
  const result = (await page.evaluate(
    "axe.run(document, { resultTypes: ['violations'] }).then(r => r.violations.map(v => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => ({ target: n.target, failureSummary: n.failureSummary })) })))",
  )) as AxeViolation[];
  return result;
}

/** A readable list of violations, for a failing expectation's message. */
export const describeViolations = (vs: AxeViolation[]): string =>
  vs.map((v) => `${v.id} (${v.impact}): ${v.help}\n${v.nodes.map((n) => `  ${n.target.join(" ")}${n.failureSummary ? ` — ${n.failureSummary.split("\n").slice(1).join("; ")}` : ""}`).join("\n")}`).join("\n");

/** Fails with the list when axe finds anything on the page. */
export async function expectNoAxeViolations(page: Page, where: string): Promise<void> {
  const vs = await axeViolations(page);
  if (vs.length) throw new Error(`axe found ${vs.length} violation(s) on ${where}:\n${describeViolations(vs)}`);
}

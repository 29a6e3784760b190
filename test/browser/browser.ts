import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { expect } from 'vitest';

export { launchChromium } from '../helpers/chromium.js';

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[] }[];
}

/** Pages checked so far, by name, so a test can show that every page was. */
export const checkedPages: string[] = [];

/**
 * Runs axe-core (injected as source, so the page's own CSP does not apply) on what the page shows now and fails on
 * any serious or critical violation, listing them.
 */
export async function expectAccessible(page: Page, name: string): Promise<void> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
  const violations = (await page.evaluate(
    `axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) })))`,
  )) as AxeViolation[];
  const serious = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(
    serious.map((v) => `${v.impact} ${v.id}: ${v.help} at ${JSON.stringify(v.nodes.map((n) => n.target))}`),
    `axe on ${name}`,
  ).toEqual([]);
  checkedPages.push(name);
}

/**
 * Presses Tab until `target` has the focus (at most `max` times), and checks that the focus is visible. This is
 * how the tests reach every control: only with the keyboard.
 */
export async function tabTo(page: Page, target: Locator, max = 60): Promise<void> {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    if (await target.evaluate((el) => el === document.activeElement).catch(() => false)) {
      const outline = await target.evaluate((el) => getComputedStyle(el).outlineStyle);
      expect(outline, 'focus is visible').not.toBe('none');
      return;
    }
  }
  throw new Error(`Tab never reached ${target}`);
}

/** `npm run screenshots` sets SCREENSHOTS_DIR (docs/screenshots); other runs take none. */
export async function screenshot(page: Page, name: string, fullPage = true): Promise<void> {
  const dir = process.env.SCREENSHOTS_DIR;
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  // Let transitions (progress bars) settle, and keep the caret out of the picture.
  await page.waitForTimeout(400);
  await page.screenshot({
    path: join(dir, `${name}.png`),
    fullPage,
    caret: 'hide',
    animations: 'disabled',
  });
}

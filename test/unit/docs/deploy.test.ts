import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { afterAll, expect, it } from 'vitest';
import { buildApp } from '#lib/app.js';

/**
 * docs/deploy.md opens with a table of the stacks `cdk synth` makes: exactly the stacks the default app defines
 * (Cognito and the operator dashboard), no more and no fewer.
 *
 * @covers docs/deploy.md
 */
const out = mkdtempSync(join(tmpdir(), 'cdk-deploy-doc-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

it('docs/deploy.md lists every stack the CDK app makes, and only those', () => {
  const app = new App({ outdir: out, context: { 'aws:cdk:bundling-stacks': [] } });
  const built = buildApp(app);
  const prefix = built.coordinator.stackName.replace(/-Coordinator$/, '');
  const stacks = app.node.children
    .filter((c): c is Stack => Stack.isStack(c))
    .map((s) => s.stackName.replace(prefix, '<prefix>'));

  const doc = readFileSync(new URL('../../../docs/deploy.md', import.meta.url), 'utf8');
  const intro = doc.slice(0, doc.indexOf('\n## '));
  const documented = [...intro.matchAll(/^\| `(<prefix>-[A-Za-z]+)` \|/gm)].map((m) => m[1]);
  expect(stacks.length).toBeGreaterThan(0);
  expect(documented.sort()).toEqual(stacks.sort());
});

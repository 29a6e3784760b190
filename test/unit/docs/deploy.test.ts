import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { afterAll, expect, it } from 'vitest';
import { buildApp } from '#lib/app.js';

/**
 * docs/deploy.md opens with the decisions an operator makes, one line each, then a table of the stacks `cdk synth`
 * makes: exactly the stacks the default app defines (Cognito and the operator dashboard), no more and no fewer.
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
  const section = doc.slice(doc.indexOf('\n## Stacks\n'), doc.indexOf('\n## Deploy\n'));
  const documented = [...section.matchAll(/^\| `(<prefix>-[A-Za-z]+)` \|/gm)].map((m) => m[1]);
  expect(stacks.length).toBeGreaterThan(0);
  expect(documented.sort()).toEqual(stacks.sort());
});

it('docs/deploy.md opens with the decisions, one line each, the network first said in its lead', () => {
  const doc = readFileSync(new URL('../../../docs/deploy.md', import.meta.url), 'utf8');
  expect(doc.indexOf('\n## Decisions\n')).toBe(doc.indexOf('\n## '));
  const decisions = doc.slice(doc.indexOf('\n## Decisions\n'), doc.indexOf('\n## Stacks\n'));
  expect(decisions.replace(/\s+/g, ' ')).toContain(
    'Without `vpc`, task services must be public HTTPS endpoints.',
  );
  const items = [...decisions.matchAll(/^- \*\*([^*]+)\*\*/gm)].map((m) =>
    m[1].replace(/ \(required\)$/, ''),
  );
  expect(items.map((i) => i.replace(/:$/, ''))).toEqual([
    'Account and region',
    'Domains',
    'Identity provider',
    'Alarm destination',
    'Network',
    'Studies source',
    'Retention',
  ]);
});

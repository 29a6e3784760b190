import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { validateWorkflow } from '@action-validator/core';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { REPO_ROOT } from '#lib/service-function.js';

/**
 * The GitHub Actions workflows under .github/workflows, which cannot run on this machine (no Docker): each is
 * validated against SchemaStore's GitHub workflow JSON schema (the one GitHub's own editors use), as
 * @action-validator/core embeds it, offline; and what they run must exist in this repository.
 *
 * @covers .github/workflows/
 */
const dir = join(REPO_ROOT, '.github', 'workflows');
const workflows = readdirSync(dir)
  .filter((f) => /\.ya?ml$/.test(f))
  .map((f) => ({ file: f, text: readFileSync(join(dir, f), 'utf8') }));
const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
  scripts: Record<string, string>;
  devDependencies: Record<string, string>;
};

interface Step {
  name?: string;
  uses?: string;
  run?: string;
  with?: Record<string, string>;
}
const steps = (text: string): Step[] =>
  Object.values((parse(text) as { jobs: Record<string, { steps: Step[] }> }).jobs).flatMap((j) => j.steps);

describe('GitHub Actions workflows', () => {
  it('exist', () => {
    expect(workflows.map((w) => w.file)).toContain('localstack-e2e.yml');
  });

  it.each(workflows.map((w) => [w.file, w.text]))(
    '%s is valid against the workflow JSON schema',
    (_, text) => {
      expect(validateWorkflow(text).errors).toEqual([]);
    },
  );

  it('the validator does refuse a workflow the schema forbids', () => {
    const broken = 'on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    stepz:\n      - run: echo\n';
    expect(validateWorkflow(broken).errors.length).toBeGreaterThan(0);
    expect(
      validateWorkflow('on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo\n')
        .errors,
    ).toEqual([]);
  });

  it('the LocalStack workflow starts LocalStack, deploys with cdklocal and runs npm run test:e2e, with what exists here', () => {
    const s = steps(workflows.find((w) => w.file === 'localstack-e2e.yml')?.text ?? '');
    const runs = s.map((x) => x.run ?? '').join('\n');
    expect(s.some((x) => x.uses?.startsWith('LocalStack/setup-localstack@'))).toBe(true);
    expect(runs).toMatch(/npx --no-install cdklocal bootstrap/);
    expect(runs).toMatch(/npx --no-install cdklocal deploy --all/);
    expect(runs).toMatch(/npm run test:e2e$/m);
    // The commands it runs are this repository's: the npm script and the pinned cdklocal.
    expect(pkg.scripts['test:e2e']).toBeDefined();
    expect(pkg.devDependencies['aws-cdk-local']).toMatch(/^\d+\.\d+\.\d+$/);
    // Every action is pinned to a version.
    for (const step of s) if (step.uses) expect(step.uses).toMatch(/@v\d/);
    // The outputs it reads are outputs the stacks declare, by their plain key (lib/auth.ts puts them on the stack).
    const declared = new Set(
      readdirSync(join(REPO_ROOT, 'lib'))
        .filter((f) => f.endsWith('.ts'))
        .flatMap((f) => [
          ...readFileSync(join(REPO_ROOT, 'lib', f), 'utf8').matchAll(/new CfnOutput\(\w+, '(\w+)'/g),
        ])
        .map((m) => m[1]),
    );
    const read = [...runs.matchAll(/out ReleaseCoordinator-\w+ (\w+)/g)].map((m) => m[1]);
    expect(read.length).toBeGreaterThan(3);
    for (const name of read) expect(declared, name).toContain(name);
  });
});

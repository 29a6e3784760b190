import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

/**
 * The import rules live in .dependency-cruiser.cjs and `npm run lint:deps` holds the project to them. This proves the
 * check can fail: the same runner, on a tree that breaks each rule once (test/fixtures/layering), must exit non-zero
 * and name every rule, and must not flag the imports the layering allows.
 *
 * @covers bin/lint-deps.ts
 */
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../..');

function cruiseFixture(): { status: number | null; out: string } {
  const run = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      'bin/lint-deps.ts',
      '--base',
      'test/fixtures/layering',
      'functions',
      'lib',
      'packages',
      'clients',
    ],
    { cwd: ROOT, encoding: 'utf8', timeout: 120_000 },
  );
  return { status: run.status, out: `${run.stdout}${run.stderr}` };
}

describe('the import rules (dependency-cruiser)', () => {
  let status: number | null;
  let out: string;
  let violations: string[];
  beforeAll(() => {
    ({ status, out } = cruiseFixture());
    violations = out.split('\n').filter((l) => l.trim().startsWith('error '));
  });

  it('fail the check on a tree that breaks them', () => {
    expect(status).not.toBe(0);
    expect(out).toMatch(/x \d+ dependency violations/);
  });

  it.each([
    ['use-cases-import-no-adapter', 'functions/coordinator/lookup.ts → functions/adapters/store.ts'],
    ['adapters-import-no-use-case', 'functions/adapters/store.ts → functions/coordinator/rules.ts'],
    ['vocabulary-imports-no-use-case', 'functions/coordinator/model.ts → functions/coordinator/rules.ts'],
    ['shared-imports-no-area', 'functions/shared/format.ts → functions/coordinator/handlers/lookup.ts'],
    ['nothing-imports-a-handler', 'functions/shared/format.ts → functions/coordinator/handlers/lookup.ts'],
    ['functions-import-only-functions', 'functions/files/index.ts → lib/stack.ts'],
    ['one-composition-root-per-handler', 'functions/files/index.ts →'],
    ['no-circular', 'functions/files/a.ts →'],
    ['packages-import-only-themselves', 'packages/kit/src/index.ts → lib/stack.ts'],
    ['clients-run-in-node-and-browsers', 'clients/upload.ts → fs'],
    ['clients-import-only-api-types', 'clients/upload.ts → lib/stack.ts'],
    [
      'functions-take-only-schema-free-kit-modules',
      'functions/coordinator/tasks.ts → packages/task-service/src/contract.ts',
    ],
  ])('report %s', (rule, edge) => {
    expect(violations.some((l) => l.includes(`error ${rule}: ${edge}`))).toBe(true);
  });

  it('let a handler import use cases and adapters, and an adapter import ports', () => {
    expect(violations.filter((l) => l.includes(': functions/coordinator/handlers/lookup.ts →'))).toEqual([]);
    expect(violations.filter((l) => l.includes('→ functions/coordinator/ports.ts'))).toEqual([]);
  });

  it('let runtime code import the kit’s protocol', () => {
    expect(violations.filter((l) => l.includes('→ packages/task-service/src/protocol.ts'))).toEqual([]);
  });
});

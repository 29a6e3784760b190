import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { functionEntries } from '#lib/bundling.js';
import { COVERAGE_DIR, type Coverage, documentOf, HANDLERS_FILE_PREFIX } from '../helpers/contract.js';

/**
 * Every route of both OpenAPI documents was exercised by this run's integration tests (the `integration` project
 * runs first), each of whose answers test/setup/contract.ts checked against the documents. Reports how many routes
 * were seen answering successfully (2xx/3xx), not only with errors.
 */
const dir = COVERAGE_DIR;

describe('contract coverage', () => {
  it('finds every route of both documents exercised by the integration tests', () => {
    expect(
      existsSync(dir),
      `${dir}: run the integration project first (npm test runs it before this one)`,
    ).toBe(true);
    const seen: Coverage = {};
    for (const file of readdirSync(dir).filter((f) => !f.startsWith(HANDLERS_FILE_PREFIX)))
      for (const [op, statuses] of Object.entries(
        JSON.parse(readFileSync(join(dir, file), 'utf8')) as Coverage,
      ))
        seen[op] = [...new Set([...(seen[op] ?? []), ...statuses])];
    const all = (['coordinator', 'files'] as const).flatMap((api) =>
      Object.entries(documentOf(api).paths).flatMap(([path, item]) =>
        Object.keys(item).map((method) => `${api} ${method.toUpperCase()} ${path}`),
      ),
    );
    const missing = all.filter((op) => !seen[op]);
    const succeeded = all.filter((op) => seen[op]?.some((s) => s < 400));
    process.stdout.write(
      `contract: ${all.length - missing.length}/${all.length} routes exercised, ${succeeded.length}/${all.length} ` +
        'with a successful answer\n',
    );
    for (const op of all.filter((o) => !succeeded.includes(o)))
      process.stdout.write(`  only errors seen: ${op} ${seen[op]?.join(', ') ?? '-'}\n`);
    expect(missing).toEqual([]);
  });

  it('finds every function of the app called by the integration tests, from the bundle that deploys', () => {
    const called = new Map<string, Set<string>>();
    for (const file of readdirSync(dir).filter((f) => f.startsWith(HANDLERS_FILE_PREFIX)))
      for (const [entry, mode] of JSON.parse(readFileSync(join(dir, file), 'utf8')) as [string, string][])
        called.set(entry, new Set([...(called.get(entry) ?? []), mode]));
    const notFromBundle = functionEntries()
      .filter((fn) => !called.get(fn.entry)?.has('bundled'))
      .map((fn) => `${fn.entry} (${fn.names.join(', ')})`);
    expect(notFromBundle).toEqual([]);
  });
});

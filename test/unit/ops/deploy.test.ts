import { describe, expect, it } from 'vitest';
import { TABLES } from '#lib/table-definitions.js';
import { type DeployDeps, deployInSteps, prefixOf } from '#ops/deploy.js';

/** A fake AWS: each Stateful-only deploy adds what the app declared (one index per table at most), as CloudFormation. */
function fakeAws(start: Record<string, string[]> | null) {
  let tables = start;
  const runs: string[][] = [];
  const deps: DeployDeps = {
    tableNames: async () =>
      tables ? Object.fromEntries(Object.keys(tables).map((k) => [k, `phys-${k}`])) : null,
    indexesOf: async (name) => tables?.[name.replace('phys-', '')] ?? [],
    cdk: async (args) => {
      runs.push(args);
      const setting = args.find((a) => a.startsWith('deployedIndexes='));
      if (!tables)
        tables = Object.fromEntries(
          Object.entries(TABLES).map(([k, t]) => [k, t.indexes.map((i) => i.indexName)]),
        );
      else if (setting) {
        const deployed = JSON.parse(setting.slice('deployedIndexes='.length)) as Record<string, string[]>;
        for (const [key, have] of Object.entries(deployed)) {
          const next = TABLES[key as keyof typeof TABLES].indexes.find((i) => !have.includes(i.indexName));
          if (next) tables[key] = [...have, next.indexName];
        }
      }
    },
    log: () => {},
  };
  return { deps, runs, tables: () => tables };
}

const all = (key: keyof typeof TABLES) => TABLES[key].indexes.map((i) => i.indexName);

describe('npm run deploy', () => {
  it('adds missing indexes one per table and deploy, the Stateful stack alone, then deploys everything', async () => {
    const aws = fakeAws({
      coordinator: ['gsi1', 'gsi2'],
      studies: all('studies'),
      files: ['gsi1', 'gsi2', 'gsi3'],
    });
    expect(await deployInSteps(aws.deps, ['-c', 'prefix=Kf', '--require-approval', 'never'])).toBe(4);
    expect(aws.runs.map((r) => r.slice(0, 3))).toEqual([
      ['deploy', 'Kf-Stateful', '--exclusively'],
      ['deploy', 'Kf-Stateful', '--exclusively'],
      ['deploy', 'Kf-Stateful', '--exclusively'],
      ['deploy', '--all', '-c'],
    ]);
    expect(aws.runs[0]).toContain(
      `deployedIndexes=${JSON.stringify({ coordinator: ['gsi1', 'gsi2'], studies: all('studies'), files: ['gsi1', 'gsi2', 'gsi3'] })}`,
    );
    for (const run of aws.runs)
      expect(run.slice(-4)).toEqual(['-c', 'prefix=Kf', '--require-approval', 'never']);
    expect(aws.tables()).toEqual({
      coordinator: all('coordinator'),
      studies: all('studies'),
      files: all('files'),
    });
  });

  it('is one deploy of every stack when nothing is missing, or when there is no Stateful stack yet', async () => {
    const current = fakeAws({
      coordinator: all('coordinator'),
      studies: all('studies'),
      files: all('files'),
    });
    expect(await deployInSteps(current.deps, [])).toBe(1);
    expect(current.runs[0].slice(0, 2)).toEqual(['deploy', '--all']);
    const fresh = fakeAws(null);
    expect(await deployInSteps(fresh.deps, [])).toBe(1);
    expect(fresh.runs).toEqual([['deploy', '--all']]);
  });

  it('reads the stack prefix from the CDK options', () => {
    expect(prefixOf([])).toBe('ReleaseCoordinator');
    expect(prefixOf(['--context', 'prefix=A'])).toBe('A');
    expect(prefixOf(['--context=prefix=B'])).toBe('B');
  });
});

import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { count } from '#functions/shared/metrics.js';
import type { Component } from '#local/component.js';
import { routeMetricLines } from '#local/metrics-file.js';

/**
 * The local stack's metric lines: the functions print EMF lines on stdout (as CloudWatch needs them on AWS), and the
 * stack moves them into a file so they never interleave with its log.
 */
describe('routeMetricLines', () => {
  let dir: string;
  let route: Component | undefined;
  let printed: string[];
  let original: typeof process.stdout.write;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'metric-lines-'));
    printed = [];
    original = process.stdout.write;
    // What reaches the terminal, under the route.
    process.stdout.write = ((chunk: unknown) => {
      printed.push(String(chunk));
      return true;
    }) as typeof process.stdout.write;
  });
  afterEach(async () => {
    await route?.stop();
    route = undefined;
    process.stdout.write = original;
    rmSync(dir, { recursive: true, force: true });
  });

  const lines = (file: string) => readFileSync(file, 'utf8').trim().split('\n');

  it("writes a function's EMF line to the file, not to stdout; every other line is printed as before", async () => {
    const file = join(dir, 'metrics.log');
    route = routeMetricLines({ file, echo: false });
    count('ReleaseStateChanged', { State: 'staged' });
    process.stdout.write('{"level":"INFO","message":"a log line"}\n');
    expect(printed).toEqual(['{"level":"INFO","message":"a log line"}\n']);
    const [line] = lines(file);
    expect(JSON.parse(line)).toMatchObject({ _aws: { CloudWatchMetrics: [{}] }, ReleaseStateChanged: 1 });
  });

  it('prints the lines too when asked (LOG_LEVEL=debug)', () => {
    const file = join(dir, 'metrics.log');
    route = routeMetricLines({ file, echo: true });
    count('ReleaseStateChanged', { State: 'staged' });
    expect(printed.filter((p) => p.startsWith('{"_aws":'))).toHaveLength(1);
    expect(lines(file)).toHaveLength(1);
  });

  it('appends across starts, and rotates the file to <file>.1 past its size limit', async () => {
    const file = join(dir, 'metrics.log');
    route = routeMetricLines({ file, echo: false });
    count('A');
    await route.stop();
    route = routeMetricLines({ file, echo: false, maxBytes: 600 });
    count('B');
    expect(lines(file)).toHaveLength(2);
    for (let i = 0; i < 5; i++) count('C');
    expect(existsSync(`${file}.1`)).toBe(true);
    expect(readFileSync(file, 'utf8').length).toBeLessThanOrEqual(600);
    expect(readFileSync(`${file}.1`, 'utf8').length).toBeLessThanOrEqual(600);
    expect(JSON.parse(lines(file).at(-1) as string)).toHaveProperty('C', 1);
    expect(printed).toEqual([]);
  });

  it('gives stdout back when stopped', async () => {
    const file = join(dir, 'metrics.log');
    route = routeMetricLines({ file, echo: false });
    await route.stop();
    route = undefined;
    count('After');
    expect(printed.filter((p) => p.startsWith('{"_aws":'))).toHaveLength(1);
  });
});

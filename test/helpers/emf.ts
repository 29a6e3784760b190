/**
 * What the functions print, read back as CloudWatch would: JSON log lines (Powertools logger) and the metric data
 * points of embedded-metric-format lines (Powertools metrics). Wraps process.stdout/stderr.write (on top of the quiet
 * output holder, which still gets everything) until `stop()`.
 */
export interface EmfPoint {
  namespace: string;
  name: string;
  unit: string;
  value: number;
  dimensions: Record<string, string>;
}

export interface CapturedOutput {
  lines: Record<string, unknown>[];
  points(): EmfPoint[];
  /**
   * Waits until `pred` holds for the points printed so far (a metric is printed right after the write it counts, so a
   * reader that saw the write may be a moment early). Throws after `timeoutMs`, which only bounds a hang.
   */
  until(pred: (points: EmfPoint[]) => boolean, timeoutMs?: number): Promise<EmfPoint[]>;
  stop(): void;
}

export function captureOutput(): CapturedOutput {
  const lines: Record<string, unknown>[] = [];
  const originals = [process.stdout, process.stderr].map((stream) => {
    const original = stream.write;
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8');
      for (const line of text.split('\n'))
        if (line.startsWith('{'))
          try {
            lines.push(JSON.parse(line));
          } catch {
            // not a JSON line
          }
      return (original as (...a: unknown[]) => boolean).call(stream, chunk, ...rest);
    }) as typeof stream.write;
    return { stream, original };
  });
  return {
    lines,
    points: () => lines.flatMap(pointsOf),
    async until(pred, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const points = lines.flatMap(pointsOf);
        if (pred(points)) return points;
        if (Date.now() > deadline) throw new Error('the expected metric points were not printed in time');
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    stop() {
      for (const { stream, original } of originals) stream.write = original;
    },
  };
}

type Emf = {
  CloudWatchMetrics: {
    Namespace: string;
    Dimensions: string[][];
    Metrics: { Name: string; Unit: string }[];
  }[];
};

function pointsOf(l: Record<string, unknown>): EmfPoint[] {
  const aws = l._aws as Emf | undefined;
  if (!aws) return [];
  return aws.CloudWatchMetrics.flatMap((d) =>
    d.Metrics.map((m) => ({
      namespace: d.Namespace,
      name: m.Name,
      unit: m.Unit,
      value: l[m.Name] as number,
      dimensions: Object.fromEntries(d.Dimensions.flat().map((k) => [k, String(l[k])])),
    })),
  );
}

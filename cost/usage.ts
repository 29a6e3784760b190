/**
 * Usage: the billable quantities of one operation (a release, a download, a scheduled run), as a flat map of
 * counters so they can be added, scaled and fitted uniformly. Keys:
 *
 *   sfn.transitions           StateEntered events (Step Functions bills each)
 *   sfn.logBytes              the state machine's CloudWatch log (LogLevel.ALL, no execution data), see sfnLogBytes
 *   lambda.<Fn>.invocations   calls of the function named in lib/api-manifest.ts / lib/orchestration-manifest.ts
 *   lambda.<Fn>.ms            their durations, each rounded up to 1 ms as Lambda bills them
 *   lambda.<Fn>.logBytes      what they wrote to stdout/stderr plus Lambda's own START/END/REPORT lines
 *   api.requests / api.units  API Gateway requests, and the same metered in 512 KB steps (HTTP APIs)
 *   api.accessLogBytes        the stage's JSON access log, one line per request (format read from lib/http-api.ts)
 *   api.responseBytes         bodies answered through API Gateway (data transfer out when the caller is outside AWS)
 *   ddb.rru / ddb.wru         DynamoDB read and write request units (table and indexes), failed writes included
 *   ddb.failedWrites          writes refused by a condition or a canceled transaction
 *   s3.tier1 / s3.tier2       S3 PUT/COPY/POST/LIST and GET/HEAD requests
 *   s3.clientBytes            bytes S3 sent to callers outside the functions (a browser following a redirect)
 *   sns.requests / sns.messages  events topic: billed requests (64 KB steps per publish call) and messages
 */
export type Usage = Record<string, number>;

export const add = (a: Usage, b: Usage, times = 1): Usage => {
  const out: Usage = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = (out[k] ?? 0) + v * times;
  return out;
};

export const scale = (a: Usage, times: number): Usage => add({}, a, times);

export const sum = (usages: Usage[]): Usage => usages.reduce((acc, u) => add(acc, u), {});

/** The keys of `u` that start with `prefix` (e.g. every lambda.*.invocations), summed. */
export function total(u: Usage, pattern: RegExp): number {
  return Object.entries(u)
    .filter(([k]) => pattern.test(k))
    .reduce((n, [, v]) => n + v, 0);
}

/** Least squares: the coefficients b minimising |X b - y|, by the normal equations (small, well-posed systems). */
export function leastSquares(rows: number[][], ys: number[]): number[] {
  const n = rows[0]?.length ?? 0;
  const a = Array.from({ length: n }, (_, i) =>
    Array.from({ length: n + 1 }, (_, j) => rows.reduce((s, r, k) => s + r[i] * (j < n ? r[j] : ys[k]), 0)),
  );
  for (let col = 0; col < n; col++) {
    let pivot = col;
    for (let r = col + 1; r < n; r++) if (Math.abs(a[r][col]) > Math.abs(a[pivot][col])) pivot = r;
    [a[col], a[pivot]] = [a[pivot], a[col]];
    if (Math.abs(a[col][col]) < 1e-12)
      throw new Error('the measurements do not determine the fit (singular)');
    for (let r = 0; r < n; r++) {
      if (r === col) continue;
      const f = a[r][col] / a[col][col];
      for (let c = col; c <= n; c++) a[r][c] -= f * a[col][c];
    }
  }
  return a.map((row, i) => row[n] / row[i]);
}

export interface Fit {
  /** The regressors, e.g. ['1', 'N', 'P', 'N*P']. */
  terms: string[];
  /** Per usage key, one coefficient per term. */
  coefficients: Record<string, number[]>;
  /** Per usage key, the largest |fitted - measured| / max(measured, 1) over the points. */
  worstRelativeError: Record<string, number>;
}

/** Fits every usage key over the points: usage(x) ~ sum of coefficient_i * term_i(x). */
export function fitUsage(
  terms: string[],
  termValues: (x: Record<string, number>) => number[],
  points: { x: Record<string, number>; usage: Usage }[],
): Fit {
  const keys = [...new Set(points.flatMap((p) => Object.keys(p.usage)))].sort();
  const rows = points.map((p) => termValues(p.x));
  const coefficients: Record<string, number[]> = {};
  const worstRelativeError: Record<string, number> = {};
  for (const key of keys) {
    const ys = points.map((p) => p.usage[key] ?? 0);
    const b = leastSquares(rows, ys);
    coefficients[key] = b.map((v) => Number(v.toPrecision(8)));
    worstRelativeError[key] = Math.max(
      ...rows.map(
        (r, i) => Math.abs(r.reduce((s, v, j) => s + v * b[j], 0) - ys[i]) / Math.max(Math.abs(ys[i]), 1),
      ),
    );
  }
  return { terms, coefficients, worstRelativeError };
}

/** The fitted usage at x (negative fitted values, from noise around zero, count as zero). */
export function evalFit(fit: Fit, termValues: number[]): Usage {
  const out: Usage = {};
  for (const [key, b] of Object.entries(fit.coefficients))
    out[key] = Math.max(
      0,
      b.reduce((s, v, j) => s + v * (termValues[j] ?? 0), 0),
    );
  return out;
}

/**
 * Lambda's own lines per invocation in the function's log group (text log format): START, END and REPORT with the
 * duration, billed duration, memory size and memory used.
 */
export function lambdaPlatformLog(
  ms: number,
  memoryMb: number,
  requestId = '00000000-0000-4000-8000-000000000000',
) {
  return [
    `START RequestId: ${requestId} Version: $LATEST\n`,
    `END RequestId: ${requestId}\n`,
    `REPORT RequestId: ${requestId}\tDuration: ${ms.toFixed(2)} ms\tBilled Duration: ${Math.ceil(ms)} ms\tMemory Size: ${memoryMb} MB\tMax Memory Used: ${Math.min(memoryMb, 128)} MB\t\n`,
  ].join('');
}

export const lambdaPlatformLogBytes = (ms: number, memoryMb: number): number =>
  Buffer.byteLength(lambdaPlatformLog(ms, memoryMb));

/**
 * One access-log line of an HTTP API stage: the stage's format (JSON with $context variables) with the request's
 * values put in. Variables not given get a typical value of their kind.
 */
export function accessLogLine(format: string, values: Record<string, string | number>): string {
  const typical: Record<string, string> = {
    requestId: 'Ab1cDeFgHiJkLmN=',
    'identity.sourceIp': '203.0.113.195',
    requestTime: '26/Nov/2026:05:03:12 +0000',
    protocol: 'HTTP/1.1',
    integrationErrorMessage: '-',
  };
  return format.replace(/\$context\.([A-Za-z.]+)/g, (_, name: string) => {
    const v = values[name] ?? typical[name] ?? '-';
    return JSON.stringify(String(v)).slice(1, -1);
  });
}

/**
 * History events AWS records for one entry into a state, by the state's kind: a Pass or Choice enters and exits; a
 * Task whose Resource is a function ARN adds LambdaFunctionScheduled/Started/Succeeded; a
 * lambda:invoke.waitForTaskToken task adds TaskScheduled/Started/Submitted and its TaskSucceeded or TaskTimedOut.
 */
export function historyEventsPerEntry(state: { Type: string; Resource?: string }): number {
  if (state.Type !== 'Task') return 2;
  if (state.Resource?.endsWith('.waitForTaskToken')) return 6;
  return 5;
}

/**
 * Bytes of one Step Functions execution-log record (LogLevel ALL, includeExecutionData false): its id, type,
 * details (the state's name, no data), previous id, timestamp, execution ARN and redrive count.
 */
export function sfnLogRecordBytes(executionArn: string, type: string, stateName: string): number {
  return Buffer.byteLength(
    JSON.stringify({
      id: '17',
      type,
      details: { input: '', inputDetails: { truncated: false }, name: stateName },
      previous_event_id: '16',
      event_timestamp: '1700000000000',
      execution_arn: executionArn,
      redrive_count: '0',
    }),
  );
}

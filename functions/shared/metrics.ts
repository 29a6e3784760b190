import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { DEFAULT_METRICS_NAMESPACE, METRICS_SERVICE } from './metric-names.js';

export { METRIC } from './metric-names.js';

/**
 * Business metrics as CloudWatch embedded metric format (EMF) lines through Powertools metrics: CloudWatch turns each
 * line of a Lambda function's log into metric data points, with no PutMetricData call and no extra latency, so on AWS
 * they must go to stdout. The local stack moves them from its stdout into a file of their own (local/metrics-file.ts).
 *
 * Every data point is its own EMF line (Powertools' single metric): a point carries only its own dimensions (an
 * action's task service and action), and nothing is buffered across invocations, so concurrent invocations in one
 * process (the local stack) never share a buffer and no handler has to flush. The names and dimensions are the
 * dashboard's and the alarms' (lib/observability.ts); docs/operations.md explains each.
 *
 * The namespace is METRICS_NAMESPACE (CDK sets it from the `metricsNamespace` context; default ReleaseCoordinator).
 */

let metrics: Metrics | undefined;

function emit(
  name: string,
  unit: (typeof MetricUnit)[keyof typeof MetricUnit],
  value: number,
  dimensions: Record<string, string>,
): void {
  try {
    // Made at the first point, so the namespace is read from the env as the function runs.
    metrics ??= new Metrics({
      namespace: process.env.METRICS_NAMESPACE || DEFAULT_METRICS_NAMESPACE,
      serviceName: METRICS_SERVICE,
    });
    const point = metrics.singleMetric();
    for (const [k, v] of Object.entries(dimensions)) point.addDimension(k, v);
    point.addMetric(name, unit, value);
  } catch {
    // A metric must never fail the work it measures (an invalid dimension value, say).
  }
}

/** Adds `value` (default 1) to a counter. */
export function count(name: string, dimensions: Record<string, string> = {}, value = 1): void {
  emit(name, MetricUnit.Count, value, dimensions);
}

/** Records a duration in milliseconds. */
export function durationMs(name: string, ms: number, dimensions: Record<string, string> = {}): void {
  emit(name, MetricUnit.Milliseconds, Math.max(0, ms), dimensions);
}

/** Records a gauge in seconds. */
export function seconds(name: string, s: number, dimensions: Record<string, string> = {}): void {
  emit(name, MetricUnit.Seconds, Math.max(0, s), dimensions);
}

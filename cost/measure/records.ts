import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import type { HistoryEvent } from '@aws-sdk/client-sfn';
import { App, Stack } from 'aws-cdk-lib';
import type { CfnStage } from 'aws-cdk-lib/aws-apigatewayv2';
import { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { COORDINATOR_API, FILES_API } from '#lib/api-manifest.js';
import { ManifestHttpApi } from '#lib/http-api.js';
import { WORKER_FUNCTIONS } from '#lib/orchestration-manifest.js';
import type { DdbRecord, InvokeRecord, MeterRecord } from '#local/meter/records.js';
import { localDefinition } from '#local/step-functions/definition.js';
import {
  accessLogLine,
  historyEventsPerEntry,
  lambdaPlatformLog,
  lambdaPlatformLogBytes,
  sfnLogRecordBytes,
  type Usage,
} from '../usage.js';
import { MEMORY_MB, STATE_MACHINE, settings } from './config.js';

/** From the meter's records to billable usage: what AWS would bill for the calls the local stack recorded. */

/** Manifest name of a handler entry (the Lambda function it deploys as). */
export const FUNCTION_NAMES = new Map<string, string>();
for (const f of [...WORKER_FUNCTIONS, ...COORDINATOR_API, ...FILES_API])
  if (!FUNCTION_NAMES.has(f.entry)) FUNCTION_NAMES.set(f.entry, f.name);

/** The access-log format of the HTTP API stages, as lib/http-api.ts synthesizes it. */
function accessLogFormat(): string {
  const stack = new Stack(new App(), 'CostAccessLogFormat');
  const built = new ManifestHttpApi(stack, 'Api', {
    apiName: 'cost',
    description: 'cost model',
    manifest: COORDINATOR_API,
    functions: Object.fromEntries(
      COORDINATOR_API.map((e) => [
        e.name,
        LambdaFunction.fromFunctionArn(
          stack,
          e.name,
          `arn:aws:lambda:us-east-1:123456789012:function:${e.name}`,
        ),
      ]),
    ),
    logRetention: settings.logRetentionDays,
    auth: { issuer: 'https://issuer.example.org', audience: ['cost'] },
    throttle: { rateLimit: 1, burstLimit: 1 },
  });
  const format = (built.stage.node.defaultChild as CfnStage).accessLogSettings as { format?: string };
  if (!format?.format) throw new Error('lib/http-api.ts no longer writes access logs: update the cost model');
  return format.format;
}
const ACCESS_LOG_FORMAT = accessLogFormat();

/** Reads the meter's records as they are appended. */
export class MeterReader {
  private offset = 0;
  constructor(readonly file: string) {}
  take(): MeterRecord[] {
    if (!existsSync(this.file)) return [];
    const buf = readFileSync(this.file);
    const end = buf.lastIndexOf(10) + 1;
    if (end <= this.offset) return [];
    const text = buf.subarray(this.offset, end).toString('utf8');
    this.offset = end;
    return text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as MeterRecord);
  }
}

/** The usage of metered records, and what a run notes beside it across its scenarios. */
export class Tally {
  /**
   * Reads whose units DynamoDB Local reported differently from the items it returned (printed at the end; the
   * usage takes the computed units, see local/meter/proxy.ts).
   */
  readonly readMismatches: DdbRecord[] = [];
  /** Invocations whose log lines make up the sample that measures how well the logs compress. */
  readonly logSample: MeterRecord[] = [];

  /**
   * The billable usage of the records, keeping the invocations `keep` accepts and whatever they caused; with
   * `onlyTagged`, requests made outside any kept invocation (a client following a redirect) are left out too.
   */
  usageOf(
    records: MeterRecord[],
    keep: (r: InvokeRecord) => boolean = () => true,
    onlyTagged = false,
  ): Usage {
    const u: Usage = {};
    const bump = (k: string, v: number) => {
      u[k] = (u[k] ?? 0) + v;
    };
    const dropped = new Set<string>();
    const kept = new Set<string>();
    for (const r of records) {
      if (r.k !== 'invoke') continue;
      if (!keep(r)) {
        dropped.add(r.id);
        continue;
      }
      kept.add(r.id);
      const fn = FUNCTION_NAMES.get(r.entry) ?? r.entry;
      bump(`lambda.${fn}.invocations`, 1);
      bump(`lambda.${fn}.ms`, Math.ceil(r.ms));
      bump(`lambda.${fn}.logBytes`, r.logBytes + lambdaPlatformLogBytes(r.ms, MEMORY_MB));
      if (r.api) {
        bump('api.requests', 1);
        bump('api.units', Math.max(1, Math.ceil((r.api.requestBytes + r.api.responseBytes) / (512 * 1024))));
        bump('api.responseBytes', r.api.responseBytes);
        bump(
          'api.accessLogBytes',
          Buffer.byteLength(
            accessLogLine(ACCESS_LOG_FORMAT, {
              httpMethod: r.api.method,
              routeKey: r.api.routeKey,
              path: r.api.path,
              status: r.api.status,
              responseLength: r.api.responseBytes,
              responseLatency: Math.ceil(r.ms),
            }),
          ),
        );
      }
    }
    for (const r of records) {
      if (r.k === 'invoke' || (r.inv && dropped.has(r.inv))) continue;
      if (onlyTagged && !(r.inv && kept.has(r.inv))) continue;
      if (r.k === 'ddb') {
        bump('ddb.rru', r.read);
        bump('ddb.wru', r.write);
        if (r.failed) bump('ddb.failedWrites', 1);
        if (r.computedRead !== undefined && Math.abs(r.computedRead - r.localUnits) > 1e-9)
          this.readMismatches.push(r);
      } else if (r.k === 's3') {
        if (r.tier !== 'free') bump(`s3.${r.tier}`, 1);
        if (!r.inv && r.method === 'GET') bump('s3.clientBytes', r.bytesOut);
      } else if (r.k === 'sns') {
        bump('sns.messages', r.messages);
        bump('sns.requests', Math.max(1, Math.ceil(r.bytes / (64 * 1024))));
      }
    }
    return u;
  }

  /**
   * gzip size / raw size of a log stream like the deployment's: every sampled invocation's START/END/REPORT lines
   * (fresh request ids), its access-log line, and the handlers' own log text the meter kept.
   */
  compressionRatio(handlerLogText: Buffer): number {
    const parts: string[] = [];
    for (const r of this.logSample) {
      if (r.k !== 'invoke') continue;
      parts.push(lambdaPlatformLog(r.ms, MEMORY_MB, randomUUID()));
      if (r.api)
        parts.push(
          `${accessLogLine(ACCESS_LOG_FORMAT, {
            requestId: randomBytes(12).toString('base64'),
            httpMethod: r.api.method,
            routeKey: r.api.routeKey,
            path: r.api.path,
            status: r.api.status,
            responseLength: r.api.responseBytes,
            responseLatency: Math.ceil(r.ms),
            requestTime: new Date(r.at).toUTCString(),
          })}\n`,
        );
    }
    const raw = Buffer.concat([Buffer.from(parts.join('')), handlerLogText]);
    return raw.length ? gzipSync(raw).length / raw.length : 1;
  }
}

const { definition } = localDefinition();

/** Transitions and execution-log bytes of a release's executions, as AWS would record them. */
export function sfnUsage(history: HistoryEvent[]): Usage {
  const arn = (name: string) => `arn:aws:states:us-east-1:123456789012:execution:${STATE_MACHINE}:${name}`;
  const execution = arn('RE_ABCDEFGH-g0');
  let transitions = 0;
  let logBytes = 0;
  for (const e of history) {
    if (e.type === 'ExecutionStarted' || e.type?.startsWith('Execution'))
      logBytes += sfnLogRecordBytes(execution, e.type ?? '', '');
    if (!e.type?.endsWith('StateEntered')) continue;
    transitions++;
    const name = e.stateEnteredEventDetails?.name ?? '';
    const state = definition.States[name] ?? { Type: 'Pass' };
    logBytes += historyEventsPerEntry(state) * sfnLogRecordBytes(execution, e.type, name);
  }
  return { 'sfn.transitions': transitions, 'sfn.logBytes': logBytes };
}

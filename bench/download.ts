/**
 * `npm run bench:download`: single-use signed URLs on the local stack (`tsx bin/local.ts` as a child process, so the
 * load generator does not share an event loop with the handlers).
 *
 *   mint    POST /signed-url/study/<s>/files/<f>/version/<v>   JWT check + version read + one 2-item transaction
 *   claim   GET  <signed url>  (2 MiB version -> 302 to S3)    one conditional update + audit put + presign
 *   race    100 concurrent GETs of one signed URL, repeated    exactly one may win
 *
 * A benchmark, not a test: it prints a markdown table and writes it into docs/benchmarks.md (section
 * bench:download). Settings: BENCH_CONNECTIONS (32), BENCH_SECONDS (10), BENCH_RACES (20), BENCH_WRITE_DOCS (true);
 * BENCH_COORDINATOR_URL + BENCH_FILES_URL + BENCH_IDP_URL drive a running stack instead of starting one (its
 * SIGNED_URL_TTL_SECONDS must then cover the run: set it to 300).
 */
import { createHash, randomBytes } from 'node:crypto';
import { Agent } from 'node:http';
import { resolve } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import autocannon, { type AutocannonResult } from 'autocannon';
import { ROOT } from '#local/config.js';
import { createTables, localClient } from '#local/dynamodb-local.js';
import { fmt, machineInfo, writeSection } from './lib/report.js';
import { benchStack, type StackEndpoints } from './lib/stack.js';

declare module 'autocannon' {
  interface AutocannonOptions {
    amount?: number;
    requests?: {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      setupRequest?: (req: Record<string, unknown>) => Record<string, unknown>;
      onResponse?: (status: number, body: string) => void;
    }[];
  }
}

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const RACES = Number(process.env.BENCH_RACES ?? 20);
const WRITE_DOCS = process.env.BENCH_WRITE_DOCS !== 'false';
const LARGE_BYTES = 2 * 1024 * 1024;

const say = (line: string) => process.stdout.write(`${line}\n`);

type Stack = StackEndpoints;

/** The stack to drive; links minted in the mint run must outlive it for the claim run (the longest TTL allowed). */
const startStack = (): Promise<Stack> => benchStack({ SIGNED_URL_TTL_SECONDS: '300' });

async function json(res: Response, what: string): Promise<any> {
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${what} answered ${res.status}: ${text}`);
  return text ? JSON.parse(text) : undefined;
}

async function seed(stack: Stack) {
  const tokenRes = await fetch(`${stack.idp}/dev/tokens`, {
    method: 'POST',
    body: JSON.stringify({ sub: 'bench-admin', roles: ['admin'], expires_in: 3600 }),
  });
  const token: string = (await json(tokenRes, 'POST /dev/tokens')).access_token;
  const auth = { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' };
  const studies = await json(
    await fetch(`${stack.coordinator}/studies?limit=1`, { headers: auth }),
    'GET /studies',
  );
  const studyId: string = studies.results[0]?.kf_id ?? studies.results[0]?.item_id;
  if (!studyId) throw new Error('the local stack has no study to upload to');
  const bytes = randomBytes(LARGE_BYTES);
  const created = await json(
    await fetch(`${stack.files}/studies/${studyId}/files`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({
        file_name: 'bench.bin',
        size: bytes.length,
        sha256: createHash('sha256').update(bytes).digest('hex'),
      }),
    }),
    'POST /studies/<id>/files',
  );
  await json(
    await fetch(created.upload.url, { method: 'PUT', body: bytes, headers: created.upload.headers }),
    'PUT upload',
  );
  await json(await fetch(created.confirm_url, { method: 'POST', headers: auth, body: '{}' }), 'confirm');
  const fileId: string = created.file.kf_id;
  const versionId: string = created.version.kf_id;
  return {
    token,
    studyId,
    fileId,
    versionId,
    mintPath: `/signed-url/study/${studyId}/files/${fileId}/version/${versionId}`,
  };
}

/**
 * The same DynamoDB work without the service around it, on the same DynamoDB Local (on disk, like the stack's data),
 * in tables of its own: `concurrency` workers back to back, as the raw ceilings are measured (docs/benchmarks.md). A mint is a GetItem plus a 2-item
 * TransactWriteItems; a claim is a conditional UpdateItem, a GetItem of the version and a PutItem with two index keys.
 */
async function ceilings(endpoint: string, concurrency: number, seconds: number) {
  const prefix = `ceil${randomBytes(3).toString('hex')}`;
  const admin = localClient(endpoint);
  await createTables(admin, prefix);
  admin.destroy();
  const table = `${prefix}-Files`;
  const doc = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' },
      requestHandler: new NodeHttpHandler({ httpAgent: new Agent({ keepAlive: true, maxSockets: 64 }) }),
    }),
  );
  const version = { pk: 'FILE#SF_X', sk: 'VERSION#FV_X', state: 'available', size: 1, key: 'k' };
  await doc.send(new PutCommand({ TableName: table, Item: version }));
  const audit = (n: number) => ({
    pk: 'AUDIT#SD_X',
    sk: `${new Date().toISOString()}#${n}`,
    gsi1pk: 'AUDIT',
    gsi1sk: `${n}`,
    gsi2pk: 'AUDIT#FILE#SF_X',
    gsi2sk: `${n}`,
    action: 'download',
    data: randomBytes(100).toString('hex'),
  });
  let seq = 0;
  const loop = async (call: () => Promise<unknown>) => {
    const latencies: number[] = [];
    const end = performance.now() + seconds * 1000;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() < end) {
          const t = performance.now();
          await call();
          latencies.push(performance.now() - t);
        }
      }),
    );
    latencies.sort((a, b) => a - b);
    const pct = (p: number) =>
      latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0;
    return { ops: latencies.length / ((performance.now() - started) / 1000), p50: pct(50), p99: pct(99) };
  };
  const mint = await loop(async () => {
    const n = seq++;
    await doc.send(
      new GetCommand({ TableName: table, Key: { pk: version.pk, sk: version.sk }, ConsistentRead: true }),
    );
    await doc.send(
      new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName: table, Item: { pk: `SIGNED#${n}`, sk: 'TOKEN', claimed: false, ttl: 1 } } },
          { Put: { TableName: table, Item: audit(n) } },
        ],
      }),
    );
  });
  const tokens = seq;
  let next = 0;
  const claim = await loop(async () => {
    const n = next++ % tokens;
    await doc
      .send(
        new UpdateCommand({
          TableName: table,
          Key: { pk: `SIGNED#${n}`, sk: 'TOKEN' },
          UpdateExpression: 'SET claimed = :t',
          ConditionExpression: 'attribute_exists(pk) AND claimed = :f',
          ExpressionAttributeValues: { ':t': true, ':f': false },
          ReturnValues: 'ALL_NEW',
        }),
      )
      .catch(() => undefined);
    await doc.send(
      new GetCommand({ TableName: table, Key: { pk: version.pk, sk: version.sk }, ConsistentRead: true }),
    );
    await doc.send(new PutCommand({ TableName: table, Item: audit(seq++) }));
  });
  doc.destroy();
  return { mint, claim };
}

interface Run {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  statusCodes: Record<string, number>;
}

function summarize(r: AutocannonResult): Run {
  return {
    rps: r.requests.total / r.duration,
    p50: r.latency.p50,
    p99: r.latency.p99,
    requests: r.requests.total,
    statusCodes: Object.fromEntries(
      Object.entries(r.statusCodeStats).map(([k, v]) => [k, (v as { count: number }).count]),
    ),
  };
}

async function main() {
  say(`bench:download — ${machineInfo()}`);
  const stack = await startStack();
  try {
    const s = await seed(stack);
    const headers = { Authorization: `Bearer ${s.token}` };

    const mintFor = async (seconds: number, connections: number) => {
      const paths: string[] = [];
      const run = await autocannon({
        url: stack.files,
        connections,
        duration: seconds,
        requests: [
          {
            method: 'POST',
            path: s.mintPath,
            headers,
            onResponse: (status, body) => {
              if (status !== 200) return;
              const url = new URL(JSON.parse(body).url);
              paths.push(`${url.pathname}${url.search}`);
            },
          },
        ],
      });
      return { run: summarize(run), paths };
    };
    const claimAll = async (paths: string[], connections: number) => {
      let next = 0;
      const run = await autocannon({
        url: stack.files,
        connections,
        amount: paths.length,
        requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: paths[next++] }) }],
      });
      return summarize(run);
    };

    // Warm both handlers (module load, JWKS fetch, JIT) before measuring.
    const warm = await mintFor(3, 8);
    await claimAll(warm.paths, 8);

    say(`minting for ${SECONDS} s at ${CONNECTIONS} connections ...`);
    const { run: mint, paths } = await mintFor(SECONDS, CONNECTIONS);
    say(`claiming ${paths.length} links at ${CONNECTIONS} connections ...`);
    const claim = await claimAll(paths, CONNECTIONS);

    say(`racing ${RACES} × 100 concurrent claims of one link ...`);
    const winners: number[] = [];
    for (let i = 0; i < RACES; i++) {
      const minted = await json(
        await fetch(`${stack.files}${s.mintPath}`, { method: 'POST', headers }),
        'POST /signed-url',
      );
      const statuses = await Promise.all(
        Array.from({ length: 100 }, () => fetch(minted.url, { redirect: 'manual' }).then((r) => r.status)),
      );
      winners.push(statuses.filter((st) => st === 302 || st === 200).length);
      if (statuses.some((st) => st !== 302 && st !== 200 && st !== 401))
        throw new Error(`unexpected status in a race: ${statuses.join(',')}`);
    }
    const exact = winners.filter((w) => w === 1).length;

    say(`the same DynamoDB work without the service, ${SECONDS} s each ...`);
    const ceiling = await ceilings(stack.dynamodb, CONNECTIONS, SECONDS);

    const ok302 = claim.statusCodes['302'] ?? 0;
    const pct = (a: number, b: number) => `${Math.round((100 * a) / b)}%`;
    const ms = (n: number) => fmt(n, 1);
    const table = [
      '| operation | requests | req/s | p50 ms | p99 ms | outcome | DynamoDB work alone (req/s, p50 / p99 ms) | share of it |',
      '|---|---:|---:|---:|---:|---|---|---:|',
      `| mint signed URL (POST /signed-url/…) | ${fmt(mint.requests)} | ${fmt(mint.rps)} | ${mint.p50} | ${mint.p99} | ${fmt(mint.statusCodes['200'] ?? 0)} × 200 | GetItem + TransactWrite(2 Puts): ${fmt(ceiling.mint.ops)}, ${ms(ceiling.mint.p50)} / ${ms(ceiling.mint.p99)} | ${pct(mint.rps, ceiling.mint.ops)} |`,
      `| claim signed URL (GET …?token=, 2 MiB -> 302) | ${fmt(claim.requests)} | ${fmt(claim.rps)} | ${claim.p50} | ${claim.p99} | ${fmt(ok302)} × 302, ${fmt(claim.statusCodes['401'] ?? 0)} × 401 | conditional UpdateItem + GetItem + PutItem: ${fmt(ceiling.claim.ops)}, ${ms(ceiling.claim.p50)} / ${ms(ceiling.claim.p99)} | ${pct(claim.rps, ceiling.claim.ops)} |`,
      `| 100-way claim race × ${RACES} | ${fmt(RACES * 100)} | – | – | – | exactly one winner in ${exact}/${RACES} races (winners per race: ${[...new Set(winners)].join(', ')}) | – | – |`,
    ].join('\n');
    const markdown = [
      '## Study file downloads (`npm run bench:download`)',
      '',
      machineInfo(),
      '',
      `Local stack (\`tsx bin/local.ts\`: DynamoDB Local, s3rver, the files API behind local/http-server.ts) in a child process; autocannon with ${CONNECTIONS} connections from this process. Mints run for ${SECONDS} s; every link minted is then claimed once (SIGNED_URL_TTL_SECONDS=300 so none expires in between). A mint verifies the JWT, reads the version and writes the token hash and its audit record in one transaction; a claim is one conditional UpdateItem, a read of the version, an audit put and a local presign of the S3 redirect. The last columns run the same DynamoDB calls from a plain loop (same concurrency, same DynamoDB Local, on disk) to show what the emulator allows on this machine. DynamoDB Local's JVM, the stack's Node process and autocannon share the 2 cores, so absolute numbers move by a third between runs when anything else runs; the share column compares two loops of the same run.`,
      '',
      table,
    ].join('\n');
    say('');
    say(markdown);
    if (WRITE_DOCS) {
      writeSection(resolve(ROOT, 'docs/benchmarks.md'), 'bench:download', markdown);
      say('\nwritten to docs/benchmarks.md');
    }
    if (exact !== RACES || ok302 !== paths.length) process.exitCode = 1;
  } finally {
    await stack.stop();
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});

import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import * as dynamodb from '@aws-sdk/client-dynamodb';
import { InvokeWithResponseStreamCommand } from '@aws-sdk/client-lambda';
import { getEndpointDiscoveryRequiredPlugin } from '@aws-sdk/middleware-endpoint-discovery';
import { NormalizedSchema } from '@smithy/core/schema';
import { describe, expect, it } from 'vitest';
import { EndpointCache } from '../../../functions/adapters/bundle-stubs/endpoint-cache.js';
import type { DocumentOperation } from '../../../functions/adapters/dynamodb/documents.js';
import {
  bundleFunction,
  describeOversized,
  FUNCTION_BUNDLE_OPTIONS,
  MAX_BUNDLE_BYTES,
  maxBundleBytes,
  oversizedBundles,
} from '../../../lib/bundling.js';
import { RecordingHandler } from '../../helpers/recording-handler.js';

/**
 * The SDK parts lib/bundling.ts replaces with stubs (functions/adapters/bundle-stubs) are never reached by what the
 * functions do. If one of these fails, a function has started to use that part: drop its alias from lib/bundling.ts.
 */

const ROOT = join(import.meta.dirname, '..', '..', '..');

/** Every `XxxCommand` imported from an @aws-sdk/client-* package under functions/, with its package. */
function sdkCommandsOfFunctions(): { pkg: string; name: string }[] {
  const found = new Map<string, { pkg: string; name: string }>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (path.endsWith('.ts')) {
        const source = readFileSync(path, 'utf8');
        for (const m of source.matchAll(/import\s*\{([^}]*)\}\s*from\s*'(@aws-sdk\/client-[a-z0-9-]+)'/g))
          for (const raw of m[1].split(',')) {
            const name = raw
              .replace(/\btype\b/, '')
              .trim()
              .split(/\s+as\s+/)[0];
            if (name.endsWith('Command')) found.set(`${m[2]}:${name}`, { pkg: m[2], name });
          }
      }
    }
  };
  walk(join(ROOT, 'functions'));
  return [...found.values()];
}

/** The DynamoDB operations of the Documents port (sent as lib-dynamodb commands by the SDK adapter). */
const DOCUMENT_OPERATIONS: DocumentOperation[] = [
  'GetItem',
  'PutItem',
  'UpdateItem',
  'DeleteItem',
  'Query',
  'TransactWriteItems',
  'BatchGetItem',
];

function streamsEvents(command: { schema?: unknown }): boolean {
  const op = command.schema as unknown[];
  expect(Array.isArray(op) && op[0] === 9, 'an operation schema').toBe(true);
  return Boolean(
    NormalizedSchema.of(op[4] as never).getEventStreamMember() ||
      NormalizedSchema.of(op[5] as never).getEventStreamMember(),
  );
}

describe('the event-stream stub', () => {
  it('is never reached: no SDK operation a function sends has an event stream', async () => {
    const commands = [
      ...sdkCommandsOfFunctions(),
      ...DOCUMENT_OPERATIONS.map((op) => ({ pkg: '@aws-sdk/client-dynamodb', name: `${op}Command` })),
    ];
    expect(commands.map((c) => c.name)).toEqual(
      expect.arrayContaining(['StartExecutionCommand', 'GetSecretValueCommand', 'GetItemCommand']),
    );
    for (const { pkg, name } of commands) {
      const module = (await import(pkg)) as Record<string, new (input: object) => { schema?: unknown }>;
      expect(module[name], `${pkg} ${name}`).toBeTypeOf('function');
      expect(streamsEvents(new module[name]({})), `${pkg} ${name}`).toBe(false);
    }
  });

  it('would be noticed: an operation that streams is recognised', () => {
    expect(streamsEvents(new InvokeWithResponseStreamCommand({ FunctionName: 'f' }))).toBe(true);
  });
});

describe('the endpoint-discovery cache stub', () => {
  const client = () => {
    const c = new dynamodb.DynamoDBClient({
      region: 'us-east-1',
      credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
      endpointDiscoveryEnabled: true,
      requestHandler: new RecordingHandler().answer({ body: '{}' }),
    });
    // The stub itself, in place of the cache the client made.
    (c.config as { endpointCache: unknown }).endpointCache = new EndpointCache();
    return c;
  };
  const inputs: Record<DocumentOperation, object> = {
    GetItem: { TableName: 't', Key: {} },
    PutItem: { TableName: 't', Item: {} },
    UpdateItem: { TableName: 't', Key: {} },
    DeleteItem: { TableName: 't', Key: {} },
    Query: { TableName: 't' },
    TransactWriteItems: { TransactItems: [] },
    BatchGetItem: { RequestItems: {} },
  };

  it('is never read: every DynamoDB operation of the functions runs with discovery on and the stub as its cache', async () => {
    const c = client();
    for (const op of DOCUMENT_OPERATIONS) {
      const Command = (dynamodb as unknown as Record<string, new (i: object) => dynamodb.GetItemCommand>)[
        `${op}Command`
      ];
      await expect(c.send(new Command(inputs[op])), op).resolves.toMatchObject({
        $metadata: { httpStatusCode: 200 },
      });
    }
  });

  it('would be noticed: a command with endpoint discovery fails on the stub', async () => {
    const c = client();
    const command = new dynamodb.GetItemCommand({ TableName: 't', Key: {} });
    command.middlewareStack.use(
      getEndpointDiscoveryRequiredPlugin(c.config as never, { clientStack: c.middlewareStack }),
    );
    await expect(c.send(command)).rejects.toThrow('Endpoint discovery is left out of this function bundle');
  });
});

describe('the bundles', () => {
  it('carry the stubs in place of the SDK parts they replace', () => {
    const { metafile } = bundleFunction(
      'functions/files/handlers/signed-url.ts',
      join(ROOT, '.test-data', 'stub-check'),
      {
        metafile: true,
      },
    );
    const inputs = Object.keys(metafile?.inputs ?? {}).map((p) => relative(ROOT, join(ROOT, p)));
    for (const target of Object.values(FUNCTION_BUNDLE_OPTIONS.alias))
      if (target.includes('bundle-stubs')) expect(inputs).toContain(target.replace(/^\.\//, ''));
    expect(inputs.filter((p) => /event-streams\/|mnemonist|endpoint-cache\/dist/.test(p))).toEqual([]);
  });
});

describe('the bundle size limit', () => {
  it('refuses a bundle one byte over 400 KB, and only that one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bundle-limit-'));
    try {
      const at = join(dir, 'at.mjs');
      const over = join(dir, 'over.mjs');
      writeFileSync(at, Buffer.alloc(MAX_BUNDLE_BYTES));
      writeFileSync(over, Buffer.alloc(MAX_BUNDLE_BYTES + 1));
      const refused = oversizedBundles([
        { file: at, names: ['AtTheLimit'] },
        { file: over, names: ['Over', 'AlsoOver'] },
      ]);
      expect(refused.map((b) => b.names)).toEqual([['Over', 'AlsoOver']]);
      expect(describeOversized(refused)).toBe('Over, AlsoOver: 400.0 KB, over the 400 KB limit');
      // An entry with a limit of its own (FilesGraphql) is held to that one.
      const graphql = 'functions/files/handlers/graphql.ts';
      const own = maxBundleBytes(graphql);
      expect(own).toBeGreaterThan(MAX_BUNDLE_BYTES);
      const within = join(dir, 'within.mjs');
      const beyond = join(dir, 'beyond.mjs');
      writeFileSync(within, Buffer.alloc(own));
      writeFileSync(beyond, Buffer.alloc(own + 1));
      const ownRefused = oversizedBundles([
        { file: within, names: ['Within'], entry: graphql },
        { file: beyond, names: ['Beyond'], entry: graphql },
        { file: within, names: ['OtherEntry'], entry: 'functions/files/handlers/files.ts' },
      ]);
      expect(ownRefused.map((b) => b.names)).toEqual([['Beyond'], ['OtherEntry']]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

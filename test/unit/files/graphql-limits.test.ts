import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Caller } from '#functions/files/access.js';
import { filesConfigFromEnv } from '#functions/files/config.js';
import { type GraphqlContext, runGraphql } from '#functions/files/graphql.js';
import { GRAPHQL_LIMITS } from '#functions/files/graphql-limits.js';
import type { DevTokenRecord, FileRecord, VersionRecord } from '#functions/files/model.js';
import type { Listing } from '#functions/files/ports.js';
import { FakeClock } from '#functions/shared/clock.js';
import type { Page } from '#functions/shared/list.js';

/**
 * The GraphQL cost is an upper bound on the repository calls a document makes. fast-check writes documents (lists
 * with any `first`, nested lists, aliases, fragments, directives, lookups, mutations) and runs them against
 * in-memory repositories that count every call: a refused document makes none, an accepted one never more than the
 * cost its validation computed. Lists hold more than 100 items, so every `first` is served in full.
 */

const STUDY = 'SD_AAAAAAAA';
const OTHER = 'SD_BBBBBBBB';
const FILES_PER_STUDY = 120;
const at = (n: number) => new Date(Date.UTC(2026, 0, 1) + n * 1000).toISOString().replace('Z', '000Z');
const fileId = (n: number) => `SF_${String(n).padStart(8, '0')}`;
const versionId = (f: number, v: number) => `FV_${String(f * 10 + v).padStart(8, '0')}`;

function world() {
  const files: FileRecord[] = [];
  const versions: VersionRecord[] = [];
  for (let i = 0; i < 2 * FILES_PER_STUDY; i++) {
    const study = i < FILES_PER_STUDY ? STUDY : OTHER;
    files.push({
      id: fileId(i),
      study_id: study,
      name: `f${i}`,
      description: null,
      created_at: at(i),
      created_by: 'u',
    });
    for (let v = 0; v < 3; v++)
      versions.push({
        id: versionId(i, v),
        file_id: fileId(i),
        study_id: study,
        key: `k/${i}/${v}`,
        file_name: `f${i}.txt`,
        size: 10,
        content_type: 'text/plain',
        sha256: '0'.repeat(64),
        state: v === 2 ? 'pending' : 'available',
        created_at: at(i * 10 + v),
        created_by: 'u',
        confirmed_at: null,
        multipart: null,
      });
  }
  const tokens: DevTokenRecord[] = Array.from({ length: 150 }, (_, i) => ({
    name: `t${i}`,
    hint: 'sfdt_abcd',
    created_at: at(i),
    created_by: 'u',
    expires_at: null,
    studies: null,
  }));
  return { files, versions, tokens };
}

const slice = <T>(items: T[], page: Page): Listing<T> => ({
  count: items.length,
  items: items.slice(page.offset, page.offset + page.limit),
});

/** Repositories over the in-memory world; every call of every method counts one. */
function countingDeps() {
  const w = world();
  let calls = 0;
  const counted =
    <A extends unknown[], R>(fn: (...args: A) => R) =>
    (...args: A): R => {
      calls++;
      return fn(...args);
    };
  const fileOf = (id: string) => w.files.find((f) => f.id === id) ?? null;
  const versionOf = (f: string, v: string) => w.versions.find((x) => x.file_id === f && x.id === v) ?? null;
  const files = {
    getFile: counted(async (id: string) => fileOf(id)),
    getFiles: counted(async (ids: readonly string[]) => ids.map(fileOf)),
    getVersion: counted(async (f: string, v: string) => versionOf(f, v)),
    getVersions: counted(async (keys: readonly { fileId: string; versionId: string }[]) =>
      keys.map((k) => versionOf(k.fileId, k.versionId)),
    ),
    getFileWithLatest: counted(async (id: string) => {
      const file = fileOf(id);
      const available = w.versions.filter((v) => v.file_id === id && v.state === 'available');
      return file ? { file, latest: available.at(-1) ?? null } : null;
    }),
    // Up to two reads per file (its newest available version; when none, its newest version): counted as two.
    summaries: async (ids: readonly string[]) => {
      calls += 2 * ids.length;
      return ids.map((id) => {
        const mine = w.versions.filter((v) => v.file_id === id);
        const available = mine.filter((v) => v.state === 'available');
        if (available.length) return { state: 'available', latest: available.at(-1) };
        return { state: mine.at(-1)?.state ?? 'no_versions', latest: null };
      });
    },
    listFiles: counted(async (study: string, page: Page) =>
      slice(
        w.files.filter((f) => f.study_id === study),
        page,
      ),
    ),
    listVersions: counted(async (id: string, page: Page) =>
      slice(
        w.versions.filter((v) => v.file_id === id),
        page,
      ),
    ),
  };
  const deps = {
    config: filesConfigFromEnv({ FILES_TABLE: 'files', STUDIES_TABLE: 'studies', FILES_BUCKET: 'bucket' }),
    clock: new FakeClock(),
    files,
    studies: { exists: counted(async (id: string) => id === STUDY || id === OTHER) },
    devTokens: {
      list: counted(async (page: Page) => slice(w.tokens, page)),
      create: counted(async () => true),
      delete: counted(async () => true),
      findByHash: counted(async () => null),
    },
    signedTokens: {
      create: counted(async () => undefined),
      claim: counted(async () => null),
      release: counted(async () => undefined),
      peek: counted(async () => null),
    },
  } as unknown as GraphqlContext['deps'];
  return { deps, calls: () => calls };
}

const admin: Caller = { kind: 'user', sub: 'a', isAdmin: true, groups: [] };
const member: Caller = { kind: 'user', sub: 'm', isAdmin: false, groups: [STUDY] };

async function run(query: string, caller: Caller, variables?: Record<string, unknown>) {
  const { deps, calls } = countingDeps();
  let cost: number | null = null;
  const res = await runGraphql(
    { query, variables },
    { deps, caller, baseUrl: 'https://files.example', info: { sourceIp: null, userAgent: null } },
    'req-1',
    (c) => {
      cost = c;
    },
  );
  return { res, calls: calls(), cost: cost as number | null };
}

// --- the document generator -------------------------------------------------------------------------------------

const firsts = fc.constantFrom<(number | null)[]>(null, 1, 2, 3, 10, 25, 50, 99, 100, 0, -3, 101, 1000);
const firstArg = (f: number | null) => (f === null ? '' : `, first: ${f}`);
const firstOnly = (f: number | null) => (f === null ? '' : `(first: ${f})`);
const alias = fc.option(fc.constantFrom('a', 'b', 'c', 'd', 'e'), { nil: undefined });
let aliasCounter = 0;
const named = (a: string | undefined, field: string) => (a ? `${a}${++aliasCounter}: ${field}` : field);
const directive = fc.constantFrom(
  '',
  '',
  '',
  ' @include(if: true)',
  ' @skip(if: true)',
  ' @include(if: false)',
);

const versionSelection = fc
  .subarray(['id', 'state', 'size', 'downloadUrl', 'sha256'], { minLength: 1 })
  .map((f) => f.join(' '));

const fileSelection: fc.Arbitrary<string> = fc
  .tuple(
    fc.subarray(['id', 'name', 'downloadUrl', 'studyId', 'state'], { minLength: 1 }),
    fc.array(fc.tuple(alias, directive, versionSelection), { maxLength: 3 }),
    fc.array(fc.tuple(alias, firsts, directive, versionSelection), { maxLength: 2 }),
  )
  .map(([scalars, latest, lists]) =>
    [
      ...scalars,
      ...latest.map(([a, d, sel]) => `${named(a, 'latestVersion')}${d} { ${sel} }`),
      ...lists.map(
        ([a, f, d, sel]) => `${named(a, `versions${firstOnly(f)}`)}${d} { totalCount nodes { ${sel} } }`,
      ),
    ].join(' '),
  );

/** A connection's selection: any of totalCount, edges { node }, nodes, pageInfo. */
const connectionOf = (node: fc.Arbitrary<string>) =>
  fc
    .tuple(
      fc.boolean(),
      fc.option(node, { nil: undefined }),
      fc.option(node, { nil: undefined }),
      fc.boolean(),
    )
    .map(([count, edges, nodes, info]) => {
      const parts = [
        count ? 'totalCount' : '',
        edges ? `edges { cursor node { ${edges} } }` : '',
        nodes ? `nodes { ${nodes} }` : '',
        info ? 'pageInfo { hasNextPage endCursor }' : '',
      ].filter(Boolean);
      return parts.length ? parts.join(' ') : 'totalCount';
    });

const rootField = fc.oneof(
  fc
    .tuple(alias, fc.constantFrom(STUDY, OTHER), firsts, directive, connectionOf(fileSelection))
    .map(([a, s, f, d, sel]) => `${named(a, `allFiles(studyId: "${s}"${firstArg(f)})`)}${d} { ${sel} }`),
  fc
    .tuple(alias, fc.integer({ min: 0, max: 300 }), firsts, connectionOf(versionSelection))
    .map(([a, n, f, sel]) => `${named(a, `allVersions(fileId: "${fileId(n)}"${firstArg(f)})`)} { ${sel} }`),
  fc
    .tuple(alias, fc.integer({ min: 0, max: 300 }), fileSelection)
    .map(([a, n, sel]) => `${named(a, `file(id: "${fileId(n)}")`)} { ${sel} }`),
  fc
    .tuple(alias, fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 3 }), versionSelection)
    .map(
      ([a, n, v, sel]) =>
        `${named(a, `version(fileId: "${fileId(n)}", id: "${versionId(n, v)}")`)} { ${sel} }`,
    ),
  fc
    .tuple(alias, firsts)
    .map(([a, f]) => `${named(a, `allDevTokens${firstOnly(f)}`)} { totalCount nodes { name token } }`),
);

/** A query, its file selection sometimes moved into a fragment spread from several places. */
const queryDocument = fc
  .tuple(fc.array(rootField, { minLength: 1, maxLength: 6 }), fc.option(fileSelection, { nil: undefined }))
  .map(([fields, fragment]) => {
    if (!fragment) return `query { ${fields.join(' ')} }`;
    const spread = `x${++aliasCounter}: allFiles(studyId: "${STUDY}", first: 20) { nodes { ...F } }`;
    return `query { ${fields.join(' ')} ${spread} } fragment F on File { ${fragment} }`;
  });

const mutationField = fc.oneof(
  fc
    .tuple(fc.integer({ min: 0, max: 300 }), fc.option(fc.integer({ min: 0, max: 2 }), { nil: undefined }))
    .map(
      ([n, v]) =>
        `signedUrl(studyId: "${n < FILES_PER_STUDY ? STUDY : OTHER}", fileId: "${fileId(n)}"${
          v === undefined ? '' : `, versionId: "${versionId(n, v)}"`
        }) { url }`,
    ),
  fc.constantFrom('createDevToken(name: "gen") { token { name } }', 'deleteDevToken(name: "t1") { success }'),
);
const mutationDocument = fc
  .array(mutationField, { minLength: 1, maxLength: 8 })
  .map((fields) => `mutation { ${fields.map((f, i) => `m${i}: ${f}`).join(' ')} }`);

describe('GraphQL cost (property)', () => {
  it('an accepted document never makes more repository calls than its computed cost; a refused one makes none', async () => {
    let accepted = 0;
    let refused = 0;
    let maxCalls = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.oneof({ weight: 4, arbitrary: queryDocument }, { weight: 1, arbitrary: mutationDocument }),
        fc.constantFrom(admin, member),
        async (query, caller) => {
          const { res, calls, cost } = await run(query, caller);
          if (res.status === 400) {
            refused++;
            expect(calls, query).toBe(0);
            return;
          }
          accepted++;
          expect(res.status, query).toBe(200);
          expect(cost, query).not.toBeNull();
          expect(cost as number, query).toBeLessThanOrEqual(GRAPHQL_LIMITS.cost);
          expect(calls, `${query}\ncost ${cost}`).toBeLessThanOrEqual(cost as number);
          maxCalls = Math.max(maxCalls, calls);
        },
      ),
      {
        numRuns: Number(process.env.FUZZ_RUNS ?? 300),
        seed: process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined,
      },
    );
    process.stdout.write(
      `graphql cost property: ${accepted} accepted, ${refused} refused, at most ${maxCalls} calls\n`,
    );
    // Both kinds happened, and some documents did real work.
    expect(accepted).toBeGreaterThan(20);
    expect(refused).toBeGreaterThan(5);
    expect(maxCalls).toBeGreaterThan(20);
  });
});

describe('GraphQL cost (cases)', () => {
  it('counts first times what a list selects: a page of 100 files with their latest version costs 102', async () => {
    const q = `{ allFiles(studyId: "${STUDY}", first: 100) { nodes { id latestVersion { id } } } }`;
    const { res, calls, cost } = await run(q, admin);
    expect(res.status).toBe(200);
    expect(cost).toBe(2 + 100 * 1);
    expect(calls).toBe(2 + 100);
  });

  it('reads what aliases repeat once: ten aliases of latestVersion cost ten, and read once per file', async () => {
    const aliases = Array.from({ length: 10 }, (_, i) => `v${i}: latestVersion { id }`).join(' ');
    const q = `{ allFiles(studyId: "${STUDY}", first: 10) { nodes { ${aliases} } } }`;
    const { res, calls, cost } = await run(q, admin);
    expect(res.status).toBe(200);
    expect(cost).toBe(2 + 10 * 10);
    expect(calls).toBe(2 + 10);
  });

  it('batches lookups by id: twenty files by id are one batched read', async () => {
    const q = `{ ${Array.from({ length: 20 }, (_, i) => `f${i}: file(id: "${fileId(i)}") { id }`).join(' ')} }`;
    const { res, calls, cost } = await run(q, admin);
    expect(res.status).toBe(200);
    expect(cost).toBe(20);
    expect(calls).toBe(1);
  });

  it('refuses the nested fan-out of lists by cost, naming the limit, before anything runs', async () => {
    const q = `{ allFiles(studyId: "${STUDY}", first: 100) { nodes { versions(first: 100) { nodes { id } } latestVersion { id } } edges { node { latestVersion { id } versions { totalCount } } } } }`;
    const { res, calls } = await run(q, admin);
    expect(res.status).toBe(400);
    expect(calls).toBe(0);
    const errors = (res.body as { errors: { message: string; extensions: Record<string, unknown> }[] })
      .errors;
    expect(errors[0].extensions).toMatchObject({
      code: 'GRAPHQL_VALIDATION_FAILED',
      limit: 'cost',
      maximum: 250,
    });
    expect(errors[0].extensions.found).toBe(2 + 100 * (1 + 1 + 1 + 1));
    expect(errors[0].message).toMatch(/limit: cost/);
  });
});

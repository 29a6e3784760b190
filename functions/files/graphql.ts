import {
  type DocumentNode,
  type ExecutionResult,
  execute,
  GraphQLError,
  parse as parseDocument,
} from 'graphql';
import { isAppError, ValidationError } from '../shared/errors.js';
import { LIMITS } from '../shared/limits.js';
import { listSortKey, type Page } from '../shared/list.js';
import { log } from '../shared/log.js';
import { SIGNED_URL_MINTED_LINE } from '../shared/metric-names.js';
import { readableStack } from '../shared/stack-trace.js';
import * as z from '../shared/zod.js';
import type { Caller } from './access.js';
import { getFile, getVersion, listStudyFiles, listVersions } from './catalog.js';
import { createDevToken, deleteDevToken, listDevTokens } from './dev-tokens.js';
import { mintSignedUrl } from './downloads.js';
import { GRAPHQL_LIMITS, validateWithLimits } from './graphql-limits.js';
import { requestLoaders } from './graphql-loaders.js';
import { buildFilesSchema } from './graphql-schema.js';
import {
  DevTokenName,
  type DevTokenRecord,
  FileId,
  type FileRecord,
  type RequestInfo,
  Rfc3339,
  StudyId,
  VersionId,
  type VersionRecord,
} from './model.js';
import type { FilesDeps, Listing } from './ports.js';
import { maskedToken } from './tokens.js';
import { downloadUrl } from './views.js';

/**
 * POST /graphql, with graphql-js. The resolvers call the same use cases as the REST routes, so every rule (membership
 * before lookup, admin-only token management, studyId checked on signedUrl) holds here too. Errors go in the
 * `errors` array with `extensions.code` (and the HTTP-equivalent `extensions.status`).
 */

const schema = buildFilesSchema();

export interface GraphqlContext {
  /** Everything but the object store and the audit query: no resolver reads or writes bytes. */
  deps: Pick<FilesDeps, 'config' | 'clock' | 'files' | 'signedTokens' | 'devTokens' | 'studies'>;
  caller: Caller;
  baseUrl: string;
  info: RequestInfo;
}

/**
 * Relay-style cursors. A cursor is the item's position in its list and its sort key (`<created_at>#<id>`), so the
 * page after it is read from that key (one Query, whatever the depth) and `offset` only labels the page for
 * `totalCount` arithmetic: `after` costs nothing more than a first page. A cursor is user input and is validated.
 */
const cursorSchema = z.strictObject({
  v: z.literal(2),
  o: z.number().check(z.int(), z.minimum(0), z.maximum(LIMITS.offset)),
  a: z.string().check(z.minLength(1), z.maxLength(512)),
});
const CURSOR_MAX = 1024;
const cursorOf = (position: number, sortKey: string) =>
  Buffer.from(JSON.stringify({ v: 2, o: position, a: sortKey })).toString('base64url');

function pageOf(args: { first?: number | null; after?: string | null }): Page {
  const first = args.first ?? 10;
  if (!Number.isInteger(first) || first < 1 || first > 100)
    throw ValidationError.field('first', 'must be between 1 and 100');
  if (args.after == null || args.after === '') return { limit: first, offset: 0 };
  if (args.after.length > CURSOR_MAX || !/^[A-Za-z0-9_-]+$/.test(args.after))
    throw ValidationError.field('after', 'is not a cursor from this API');
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(args.after, 'base64url').toString('utf8'));
  } catch {
    throw ValidationError.field('after', 'is not a cursor from this API');
  }
  const c = z.safeParse(cursorSchema, decoded);
  if (!c.success) throw ValidationError.field('after', 'is not a cursor from this API');
  return { limit: first, offset: c.data.o + 1, cursor: { after: c.data.a } };
}

function connection<R, N>(listing: Listing<R>, page: Page, sortKey: (r: R) => string, toNode: (r: R) => N) {
  const edges = listing.items.map((r, i) => ({
    cursor: cursorOf(page.offset + i, sortKey(r)),
    node: toNode(r),
  }));
  return {
    totalCount: listing.count,
    edges,
    nodes: edges.map((e) => e.node),
    pageInfo: {
      hasNextPage: page.offset + listing.items.length < listing.count,
      hasPreviousPage: page.offset > 0,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
    },
  };
}

const byRecord = (r: { created_at: string; id: string }) => listSortKey(r.created_at, r.id);
const byToken = (t: DevTokenRecord) => listSortKey(t.created_at, t.name);

/** Validates one argument with zod; a failure is a BAD_USER_INPUT error naming the argument. */
function arg<S extends z.core.$ZodType>(name: string, s: S, value: unknown): z.output<S> {
  const r = z.safeParse(s, value);
  if (!r.success) throw ValidationError.field(name, r.error.issues[0]?.message ?? 'is invalid');
  return r.data;
}

function versionNode(ctx: GraphqlContext, v: VersionRecord) {
  return {
    id: v.id,
    kfId: v.id,
    fileId: v.file_id,
    studyId: v.study_id,
    fileName: v.file_name,
    size: v.size,
    contentType: v.content_type,
    sha256: v.sha256,
    state: v.state.toUpperCase(),
    createdAt: v.created_at,
    uploadedBy: v.created_by,
    confirmedAt: v.confirmed_at,
    downloadUrl: v.state === 'available' ? downloadUrl(ctx.baseUrl, v.study_id, v.file_id, v.id) : null,
  };
}

function fileNode(ctx: GraphqlContext, f: FileRecord) {
  return {
    id: f.id,
    kfId: f.id,
    studyId: f.study_id,
    name: f.name,
    description: f.description,
    createdAt: f.created_at,
    createdBy: f.created_by,
    downloadUrl: downloadUrl(ctx.baseUrl, f.study_id, f.id),
    // Nested fields are resolved only when asked for.
    state: async () => {
      const [summary] = await ctx.deps.files.summaries([f.id]);
      return summary.state.toUpperCase();
    },
    latestVersion: async () => {
      const latest = (await ctx.deps.files.getFileWithLatest(f.id))?.latest;
      return latest ? versionNode(ctx, latest) : null;
    },
    versions: async (args: { first?: number; after?: string }) => {
      const page = pageOf(args);
      const listing = await ctx.deps.files.listVersions(f.id, page);
      return connection(listing, page, byRecord, (v) => versionNode(ctx, v));
    },
  };
}

function devTokenNode(t: DevTokenRecord, secret?: string) {
  return {
    id: t.name,
    name: t.name,
    token: secret ?? maskedToken(t.hint),
    createdAt: t.created_at,
    createdBy: t.created_by,
    expiresAt: t.expires_at,
    studies: t.studies,
  };
}

type Args = Record<string, any>;

const rootValue = {
  allFiles: async (args: Args, ctx: GraphqlContext) => {
    const page = pageOf(args);
    const studyId = arg('studyId', StudyId, args.studyId);
    const listing = await listStudyFiles(ctx.deps, ctx.caller, studyId, page);
    return connection(listing, page, byRecord, (f) => fileNode(ctx, f));
  },
  allVersions: async (args: Args, ctx: GraphqlContext) => {
    const page = pageOf(args);
    const fileId = arg('fileId', FileId, args.fileId);
    const listing = await listVersions(ctx.deps, ctx.caller, fileId, page);
    return connection(listing, page, byRecord, (v) => versionNode(ctx, v));
  },
  file: async (args: Args, ctx: GraphqlContext) =>
    fileNode(ctx, await getFile(ctx.deps, ctx.caller, arg('id', FileId, args.id))),
  version: async (args: Args, ctx: GraphqlContext) =>
    versionNode(
      ctx,
      await getVersion(
        ctx.deps,
        ctx.caller,
        arg('fileId', FileId, args.fileId),
        arg('id', VersionId, args.id),
      ),
    ),
  allDevTokens: async (args: Args, ctx: GraphqlContext) => {
    const page = pageOf(args);
    const listing = await listDevTokens(ctx.deps, ctx.caller, page);
    return connection(listing, page, byToken, (t) => devTokenNode(t));
  },
  signedUrl: async (args: Args, ctx: GraphqlContext) => {
    const signed = await mintSignedUrl(
      ctx.deps,
      { kind: 'caller', caller: ctx.caller },
      {
        studyId: arg('studyId', z.string().check(z.maxLength(64)), args.studyId),
        fileId: arg('fileId', z.string().check(z.maxLength(64)), args.fileId),
        versionId:
          args.versionId == null
            ? undefined
            : arg('versionId', z.string().check(z.maxLength(64)), args.versionId),
      },
      ctx.baseUrl,
      ctx.info,
    );
    // Counted as SignedUrlsMinted by a metric filter on this line (docs/operations.md): a filter built while bundles
    // had a 400 KB cap; the line stays the one contract between this function and the metric.
    log.info(SIGNED_URL_MINTED_LINE, { version_id: signed.version_id });
    return { url: signed.url, expiresAt: signed.expires_at, versionId: signed.version_id };
  },
  createDevToken: async (args: Args, ctx: GraphqlContext) => {
    const name = arg('name', DevTokenName, args.name);
    const expiresAt = args.expiresAt == null ? null : arg('expiresAt', Rfc3339, args.expiresAt);
    const studies =
      args.studies == null
        ? null
        : arg('studies', z.array(StudyId).check(z.minLength(1), z.maxLength(LIMITS.studies)), args.studies);
    const { record, secret } = await createDevToken(
      ctx.deps,
      ctx.caller,
      { name, expiresAtMs: expiresAt === null ? null : Date.parse(expiresAt), studies },
      ctx.info,
    );
    return { token: devTokenNode(record, secret) };
  },
  deleteDevToken: async (args: Args, ctx: GraphqlContext) => {
    const name = arg('name', z.string().check(z.maxLength(100)), args.name);
    await deleteDevToken(ctx.deps, ctx.caller, name, ctx.info);
    return { success: true, name };
  },
};

/** REST error codes as the GraphQL community spells them. */
const CODES: Record<string, string> = {
  unauthorized: 'UNAUTHENTICATED',
  forbidden: 'FORBIDDEN',
  not_found: 'NOT_FOUND',
  validation_error: 'BAD_USER_INPUT',
  conflict: 'CONFLICT',
};

function formatError(err: GraphQLError, requestId: string) {
  const base = { message: err.message, locations: err.locations, path: err.path };
  const original = err.originalError;
  if (isAppError(original)) {
    return {
      ...base,
      message: original.message,
      extensions: {
        code: CODES[original.code] ?? original.code.toUpperCase(),
        status: original.status,
        ...(original.fields ? { fields: original.fields } : {}),
      },
    };
  }
  if (original && !(original instanceof GraphQLError)) {
    log.error('graphql resolver failed', { requestId, error: readableStack(original) });
    return {
      ...base,
      message: `Internal server error (request ${requestId})`,
      extensions: { code: 'INTERNAL_SERVER_ERROR', status: 500 },
    };
  }
  return { ...base, extensions: { code: 'GRAPHQL_VALIDATION_FAILED', status: 400, ...err.extensions } };
}

export interface GraphqlRequest {
  query: string;
  variables?: Record<string, unknown> | null;
  operationName?: string | null;
}

/**
 * Parses, checks the limits (graphql-limits.ts), validates and runs one operation; the answer always has the GraphQL
 * shape ({data?, errors?}). A refused document is a 400 whose error names the limit. Every repository read of the
 * request goes through one set of DataLoaders (graphql-loaders.ts). `onCost` (tests) receives the computed cost.
 */
export async function runGraphql(
  req: GraphqlRequest,
  ctx: GraphqlContext,
  requestId: string,
  onCost?: (cost: number) => void,
) {
  let document: DocumentNode;
  try {
    document = parseDocument(req.query, { maxTokens: GRAPHQL_LIMITS.tokens });
  } catch (err) {
    const e = err as GraphQLError;
    const tooLong = /more than \d+ tokens/.test(e.message);
    return {
      status: 400,
      body: {
        errors: [
          {
            message: tooLong
              ? `The document has more than ${GRAPHQL_LIMITS.tokens} tokens (limit: tokens)`
              : e.message,
            locations: e.locations,
            extensions: {
              code: 'GRAPHQL_PARSE_FAILED',
              status: 400,
              ...(tooLong ? { limit: 'tokens', maximum: GRAPHQL_LIMITS.tokens } : {}),
            },
          },
        ],
      },
    };
  }
  const variables = req.variables ?? undefined;
  const operationName = req.operationName ?? undefined;
  const invalid = validateWithLimits(schema, document, variables, operationName, onCost);
  if (invalid.length) return { status: 400, body: { errors: invalid.map((e) => formatError(e, requestId)) } };
  const result = (await execute({
    schema,
    document,
    rootValue,
    contextValue: { ...ctx, deps: requestLoaders(ctx.deps) },
    variableValues: variables,
    operationName,
  })) as ExecutionResult;
  const body: Record<string, unknown> = { data: result.data ?? null };
  if (result.errors?.length) body.errors = result.errors.map((e) => formatError(e, requestId));
  return { status: 200, body };
}

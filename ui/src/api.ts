import createClient, { type Client } from 'openapi-fetch';
import type {
  components as CoordinatorComponents,
  paths as CoordinatorPaths,
} from '../../openapi/types/coordinator';
import type { components as FilesComponents, paths as FilesPaths } from '../../openapi/types/files';
import type { DashboardConfig } from './config';

/**
 * The dashboard talks only to the two public APIs, with the signed-in user's bearer token, through openapi-fetch
 * over the types `npm run openapi` generates from the OpenAPI documents (openapi/types/, as the CLI does): a path,
 * parameter, body or answer that drifts from the documents fails `npm run typecheck`. Errors arrive in the APIs' one
 * shape, {"error": {"code", "message", "fields"?}}, and become an ApiError.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fields: Record<string, string[]> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

type CoordinatorSchemas = CoordinatorComponents['schemas'];
type FilesSchemas = FilesComponents['schemas'];
export type Release = CoordinatorSchemas['Release'];
export type CoordinatorEvent = CoordinatorSchemas['Event'];
export type TaskService = CoordinatorSchemas['TaskService'];
export type Study = CoordinatorSchemas['Study'];
export type StudyFile = FilesSchemas['File'];
export type FileVersion = FilesSchemas['Version'];
export type UploadInstructions = FilesSchemas['UploadInstructions'];

/**
 * Whether each release state is final, in the order a release goes through them (the filter's options). A record
 * over the generated union, so tsc fails when the API gains or loses a state.
 */
const FINAL: Record<Release['state'], boolean> = {
  initializing: false,
  running: false,
  staged: false,
  publishing: false,
  published: true,
  canceling: false,
  canceled: true,
  failed: true,
};
export const RELEASE_STATES = Object.keys(FINAL) as Release['state'][];
export const isFinal = (state: Release['state']) => FINAL[state];

export interface Api {
  coordinator: Client<CoordinatorPaths>;
  files: Client<FilesPaths>;
}

/** What an openapi-fetch call resolves to. */
export interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

function errorOf(status: number, body: unknown): ApiError {
  const e = (body as { error?: { code?: unknown; message?: unknown; fields?: unknown } } | undefined)?.error;
  if (e && typeof e.code === 'string' && typeof e.message === 'string')
    return new ApiError(status, e.code, e.message, (e.fields as Record<string, string[]>) ?? {});
  return new ApiError(status, 'http_error', `The server answered ${status}`);
}

/** The answer's body, or the ApiError its error body describes. */
export async function must<T>(call: Promise<Answer<T>>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) throw errorOf(response.status, error);
  return data as T;
}

/** A conditional read (If-None-Match): 304 (unchanged, no body) or the new body with its ETag. */
export type Conditional<T> = { changed: false } | { changed: true; etag: string | null; data: T };

export async function conditional<T>(call: Promise<Answer<T>>): Promise<Conditional<T>> {
  const { data, error, response } = await call;
  if (response.status === 304) return { changed: false };
  if (!response.ok) throw errorOf(response.status, error);
  return { changed: true, etag: response.headers.get('ETag'), data: data as T };
}

/**
 * Headers of a create: a fresh random Idempotency-Key per user action, so the APIs answer a repeated key with the
 * first answer (`Idempotent-Replayed: true`) instead of making a second release, task service, note or file.
 */
export const createHeaders = () => ({ 'Idempotency-Key': crypto.randomUUID() });

export function createApi(
  config: DashboardConfig,
  token: () => string | null,
  onUnauthorized: () => void,
): Api {
  const options = (baseUrl: string) => ({
    baseUrl,
    headers: { Accept: 'application/json' },
    // The app keeps its own validators; the browser cache must not answer for the server.
    cache: 'no-store' as const,
  });
  const auth = {
    onRequest({ request }: { request: Request }) {
      const bearer = token();
      if (bearer) request.headers.set('Authorization', `Bearer ${bearer}`);
      return request;
    },
    onResponse({ response }: { response: Response }) {
      if (response.status === 401) onUnauthorized();
      return response;
    },
  };
  const coordinator = createClient<CoordinatorPaths>(options(config.coordinatorUrl));
  const files = createClient<FilesPaths>(options(config.filesUrl));
  coordinator.use(auth);
  files.use(auth);
  return { coordinator, files };
}

/** The `cursor` of a list's `next` link: where the following page starts. */
export const cursorOf = (next: string) => new URL(next).searchParams.get('cursor') ?? undefined;

/** Every study (the APIs cap a page at 100), following each page's `next`. */
export async function allStudies(api: Api, max = 2000): Promise<Study[]> {
  const out: Study[] = [];
  let cursor: string | undefined;
  do {
    const page = await must(api.coordinator.GET('/studies', { params: { query: { limit: 100, cursor } } }));
    out.push(...page.results);
    cursor = page.next ? cursorOf(page.next) : undefined;
  } while (cursor && out.length < max);
  return out;
}

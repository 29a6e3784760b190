import createClient, { type Client } from 'openapi-fetch';
import type { paths as CoordinatorPaths } from '#openapi/types/coordinator.js';
import type { paths as FilesPaths } from '#openapi/types/files.js';

/**
 * Typed clients of both APIs: openapi-fetch over the types `npm run openapi` generates from the OpenAPI documents
 * (openapi/types/*.ts). Paths, parameters, bodies and answers are checked by tsc against the documents, so a change
 * of a route contract that breaks a caller fails `npm run typecheck`.
 *
 *   const api = coordinatorClient('http://127.0.0.1:3000', token);
 *   const { data, error } = await api.GET('/releases/{id}', { params: { path: { id } } });
 *   // data: components['schemas']['Release'] | undefined; error: the error body of a documented status
 */
export type { components as CoordinatorComponents } from '#openapi/types/coordinator.js';
export type { components as FilesComponents } from '#openapi/types/files.js';
export type CoordinatorClient = Client<CoordinatorPaths>;
export type FilesClient = Client<FilesPaths>;

/** `Authorization` for a bearer JWT, or a developer / signed-URL token (`Token …`). */
export type Credential = { bearer: string } | { token: string } | null;

function headersOf(credential: Credential): Record<string, string> {
  if (!credential) return {};
  return {
    Authorization: 'bearer' in credential ? `Bearer ${credential.bearer}` : `Token ${credential.token}`,
  };
}

export interface ClientOptions {
  /** A fetch of your own (retries, a proxy, a test double). */
  fetch?: typeof fetch;
}

/** The coordinator API at `baseUrl` (e.g. DRC_COORDINATOR_URL), calling with a bearer JWT. */
export function coordinatorClient(
  baseUrl: string,
  bearer: string | null,
  opts: ClientOptions = {},
): CoordinatorClient {
  return createClient<CoordinatorPaths>({
    baseUrl: baseUrl.replace(/\/$/, ''),
    headers: headersOf(bearer ? { bearer } : null),
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
  });
}

/** The study file service at `baseUrl` (e.g. DRC_FILES_URL), with a bearer JWT or a developer token. */
export function filesClient(baseUrl: string, credential: Credential, opts: ClientOptions = {}): FilesClient {
  return createClient<FilesPaths>({
    baseUrl: baseUrl.replace(/\/$/, ''),
    headers: headersOf(credential),
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
  });
}

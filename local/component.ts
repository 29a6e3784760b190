import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from './config.js';

/**
 * One piece of the local stack (DynamoDB Local, the identity provider, s3rver, the Step Functions endpoint, ...).
 * `start*` functions return this shape; bin/local.ts composes them.
 */
export interface Component {
  name: string;
  /**
   * Environment the Lambda handlers need to reach this component, e.g. AWS_ENDPOINT_URL_S3. It is copied into
   * process.env before any handler module is imported, because handlers parse their config at module load.
   */
  env: Record<string, string>;
  /** Base URLs worth printing at start-up, by label. */
  urls?: Record<string, string>;
  /** Stops the component and any child process it started; must resolve even if already stopped. */
  stop(): Promise<void>;
}

/** A module of the repository, or undefined when its file does not exist yet (parts written by others). */
export async function importOptional<T>(relativePath: string): Promise<T | undefined> {
  const file = resolve(ROOT, relativePath);
  if (!existsSync(file)) return undefined;
  return (await import(pathToFileURL(file).href)) as T;
}

/** Handler modules are loaded through the one LOCAL_HANDLERS switch (source or bundled): local/handlers.ts. */
export { loadHandler } from './handlers.js';

export function entryExists(entry: string): boolean {
  return existsSync(resolve(ROOT, entry));
}

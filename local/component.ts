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

/** Handler modules are loaded through the one LOCAL_HANDLERS switch (source or bundled): local/handlers.ts. */
export { loadHandler } from './handlers.js';

import { join } from 'node:path';

/**
 * For a test that spawns `npm start`: in the bundled project (LOCAL_HANDLERS=bundled) the spawned stack builds its
 * own bundles at start-up, replacing its bundle directory. That must be a directory of its own (under its DATA_DIR),
 * never the one the run's other suites are loading bundles from. Nothing in source mode.
 */
export function ownBundlesEnv(dataDir: string): Record<string, string> {
  return process.env.LOCAL_HANDLERS === 'bundled' ? { LOCAL_BUNDLES_DIR: join(dataDir, 'bundles') } : {};
}

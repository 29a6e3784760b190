import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as z from 'zod';
import { BUNDLE_FILE, BUNDLES_DIR, bundleDirOf } from '#lib/bundling.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The one switch for how the local stack and the tests run a Lambda handler (LOCAL_HANDLERS):
 *   source   (default) the TypeScript module itself, through tsx/vitest: fast to edit, good stack traces;
 *   bundled  the esbuild bundle that deploys (lib/bundling.ts, `npm run build:functions`), minified as on AWS.
 * Everything that imports a handler module (the HTTP servers, the Step Functions endpoint's task states, the
 * scheduled workers, the test harnesses) goes through loadHandlerModule, so both modes run the same paths.
 */
export const HANDLER_SOURCES = ['source', 'bundled'] as const;
export type HandlerSource = (typeof HANDLER_SOURCES)[number];

const switchEnv = z.object({ LOCAL_HANDLERS: z.enum(HANDLER_SOURCES).default('source') });

/** LOCAL_HANDLERS, checked: anything but source or bundled is a configuration error naming the variable. */
export function handlerSource(env: NodeJS.ProcessEnv = process.env): HandlerSource {
  const parsed = switchEnv.safeParse(env);
  if (!parsed.success)
    throw new Error(`Invalid configuration: LOCAL_HANDLERS must be one of ${HANDLER_SOURCES.join(', ')}`);
  return parsed.data.LOCAL_HANDLERS;
}

/** Where the bundles are read from: BUNDLES_DIR (dist/functions) unless LOCAL_BUNDLES_DIR names another build. */
export function bundlesDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.LOCAL_BUNDLES_DIR ? resolve(env.LOCAL_BUNDLES_DIR) : BUNDLES_DIR;
}

/** The file a manifest entry (e.g. functions/coordinator/handlers/health.ts) is loaded from, in either mode. */
export function handlerFile(entry: string, source: HandlerSource = handlerSource()): string {
  if (source === 'source') return resolve(ROOT, entry);
  const file = join(bundleDirOf(entry, bundlesDir()), BUNDLE_FILE);
  if (!existsSync(file))
    throw new Error(`LOCAL_HANDLERS=bundled: no bundle for ${entry} at ${file}; run npm run build:functions`);
  return file;
}

/**
 * The module of a function entry (its `handler`, and whatever else it exports, e.g. `createHandler`). With
 * LOCAL_METER_FILE set (`npm run cost:measure`), `handler` is wrapped so every call is recorded (local/meter/meter.ts).
 */
export async function loadHandlerModule<M = Record<string, unknown>>(entry: string): Promise<M> {
  const loaded = (await import(pathToFileURL(handlerFile(entry)).href)) as Record<string, unknown>;
  if (typeof loaded.handler !== 'function') return loaded as M;
  const mod: Record<string, unknown> & { handler: Handler } = {
    ...loaded,
    handler: recordingCalls(entry, loaded.handler as Handler),
  };
  // The file service's handlers also export createHandler(clock), which the tests call with a clock of their own.
  const create = loaded.createHandler;
  if (typeof create === 'function')
    mod.createHandler = (...args: unknown[]) => recordingCalls(entry, create(...args) as Handler);
  if (!process.env.LOCAL_METER_FILE) return mod as M;
  const { meter } = await import('./meter/meter.js');
  const m = meter();
  return (m ? { ...mod, handler: m.wrap(entry, mod.handler) } : mod) as M;
}

type Handler = (...args: unknown[]) => Promise<unknown>;

/**
 * The entries whose handler this process has called, in which mode (`functions/...ts` -> `source` or `bundled`).
 * The integration run checks from it that every function's bundle was loaded and answered at least once.
 */
export const calledHandlers = new Map<string, HandlerSource>();

function recordingCalls(entry: string, handler: Handler): Handler {
  const source = handlerSource();
  // The handler's own properties (httpApp's routeTable) stay readable on the wrapper.
  return Object.assign((...args: unknown[]) => {
    calledHandlers.set(entry, source);
    return handler(...args);
  }, handler);
}

/** The `handler` export of a function entry of lib/api-manifest.ts or lib/orchestration-manifest.ts. */
export async function loadHandler<H>(entry: string): Promise<H> {
  const mod = await loadHandlerModule<{ handler?: H }>(entry);
  if (typeof mod.handler !== 'function') throw new Error(`${entry} does not export a handler function`);
  return mod.handler;
}

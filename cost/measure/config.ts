import { resolve } from 'node:path';
import { ROOT } from '#local/config.js';
import { deploySettings } from '../settings.js';

/** The settings of one `npm run cost:measure` (the top of cost/measure.ts lists them), read once. */
export const OUT = resolve(ROOT, process.env.COST_PROFILE ?? 'docs/cost-profile.json');
export const SERVICES = (process.env.COST_SERVICES ?? '1,10,50').split(',').map(Number);
export const POLLS = (process.env.COST_POLLS ?? '1,5,20').split(',').map(Number);
export const DOWNLOADS = Number(process.env.COST_DOWNLOADS ?? 10);
/** How long the schedules scenario observes each phase. */
export const PHASE_MS = Number(process.env.COST_PHASE_SECONDS ?? 26) * 1000;
export const DEBUG = Boolean(process.env.COST_DEBUG);

/** The local stack's poll interval: a round costs the same whatever its interval, so the shortest is taken. */
export const LOCAL_POLL_SECONDS = 1;
/** The download scenario's files: one the function answers itself, one it redirects to S3. */
export const SMALL_BYTES = 64 * 1024;
export const LARGE_BYTES = 2 * 1024 * 1024;

export const settings = deploySettings();
export const MEMORY_MB = settings.functionMemoryMb;
export const STATE_MACHINE = `${settings.prefix}-release`;

export const say = (line: string) => process.stdout.write(`${line}\n`);

import { z } from 'zod';

/**
 * The cost profile (docs/cost-profile.json): what one release, callback, download and scheduled run costs in
 * billable units, measured by `npm run cost:measure` from the running code and read by `npm run cost`.
 */
const usage = z.record(z.string(), z.number());

const fit = z.object({
  terms: z.array(z.string()),
  coefficients: z.record(z.string(), z.array(z.number())),
  worstRelativeError: z.record(z.string(), z.number()),
});

export const profileSchema = z.object({
  version: z.literal(1),
  measured: z.object({
    date: z.string(),
    commit: z.string(),
    machine: z.string(),
    durationSeconds: z.number(),
  }),
  /** The settings the measurement ran with (function memory for the REPORT lines, log level, poll interval). */
  settings: z.object({
    functionMemoryMb: z.number(),
    logLevel: z.string(),
    localPollSeconds: z.number(),
    stateMachineName: z.string(),
  }),
  release: z.object({
    /** usage(N, P) = c1 + cN*N + cP*P + cNP*N*P, N task services, P poll rounds (Poll states entered). */
    fit,
    points: z.array(z.object({ N: z.number(), P: z.number(), stagePolls: z.number(), usage })),
    studiesPerRelease: z.number(),
  }),
  /** One PATCH /tasks/<id> callback from a task service, with what it causes. */
  callback: z.object({ usage, measuredCallbacks: z.number() }),
  /** One download of each kind. */
  downloads: z.record(z.enum(['bearer-direct', 'signed-url', 'redirect']), usage),
  downloadFiles: z.object({ directBytes: z.number(), redirectBytes: z.number(), repetitions: z.number() }),
  /** One run of each scheduled function: usage(S, A, studies) over the terms of each fit. */
  schedules: z.record(z.enum(['HealthCheck', 'Reconciler', 'StudySync']), fit),
  logs: z.object({
    /** gzip size / raw size of the handlers' own log text: how much CloudWatch's storage shrinks it. */
    compressionRatio: z.number(),
  }),
  /** DynamoDB bytes (items and index entries) left behind. */
  storage: z.object({ bytesPerRelease: fit, bytesPerDownload: z.number() }),
});

export type CostProfile = z.infer<typeof profileSchema>;
export type FitJson = z.infer<typeof fit>;

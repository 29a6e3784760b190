import * as z from 'zod';
import pkg from '../../package.json' with { type: 'json' };
import { parseEnv } from '../shared/config.js';

/**
 * Settings of the GA4GH DRS API, parsed once per container. The service-info fields (id, name, organization,
 * version) are what a GA4GH service registry lists; every deployment should set its own.
 */
export const drsEnv = z.object({
  /** Longest `bulk_object_ids` / `bulk_object_access_ids` a bulk request may carry; more is a 413. */
  DRS_MAX_BULK_REQUEST_LENGTH: z.coerce.number().int().min(1).max(1000).default(200),
  /** service-info `id`: reverse domain notation is recommended. */
  DRS_SERVICE_ID: z.string().min(1).default('org.kidsfirstdrc.study-files.drs'),
  DRS_SERVICE_NAME: z.string().min(1).default('Study file service'),
  DRS_SERVICE_DESCRIPTION: z
    .string()
    .min(1)
    .default('GA4GH DRS 1.5 over the study file service: every available file version is a DRS object.'),
  DRS_ORGANIZATION_NAME: z.string().min(1).default('Kids First Data Resource Center'),
  DRS_ORGANIZATION_URL: z.string().url().default('https://kidsfirstdrc.org'),
  DRS_CONTACT_URL: z.string().url().optional(),
  DRS_DOCUMENTATION_URL: z.string().url().optional(),
  /** e.g. prod, staging, test, dev. */
  DRS_ENVIRONMENT: z.string().min(1).optional(),
  /** service-info `version`: the version of this service (not of the DRS specification). */
  DRS_SERVICE_VERSION: z.string().min(1).default(pkg.version),
});
export type DrsConfig = z.infer<typeof drsEnv>;

export function drsConfigFromEnv(env: NodeJS.ProcessEnv = process.env): DrsConfig {
  return parseEnv(drsEnv, env);
}

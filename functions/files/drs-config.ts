import pkg from '../../package.json' with { type: 'json' };
import { parseEnv } from '../shared/config.js';
import * as z from '../shared/zod.js';

/**
 * Settings of the GA4GH DRS API, parsed once per container. The service-info fields (id, name, organization,
 * version) are what a GA4GH service registry lists; every deployment should set its own.
 */
const nonEmpty = () => z.string().check(z.minLength(1));

export const drsEnv = z.object({
  /** Longest `bulk_object_ids` / `bulk_object_access_ids` a bulk request may carry; more is a 413. */
  DRS_MAX_BULK_REQUEST_LENGTH: z._default(
    z.coerce.number().check(z.int(), z.minimum(1), z.maximum(1000)),
    200,
  ),
  /** service-info `id`: reverse domain notation is recommended. */
  DRS_SERVICE_ID: z._default(nonEmpty(), 'org.kidsfirstdrc.study-files.drs'),
  DRS_SERVICE_NAME: z._default(nonEmpty(), 'Study file service'),
  DRS_SERVICE_DESCRIPTION: z._default(
    nonEmpty(),
    'GA4GH DRS 1.5 over the study file service: every available file version is a DRS object.',
  ),
  DRS_ORGANIZATION_NAME: z._default(nonEmpty(), 'Kids First Data Resource Center'),
  DRS_ORGANIZATION_URL: z._default(z.url(), 'https://kidsfirstdrc.org'),
  DRS_CONTACT_URL: z.optional(z.url()),
  DRS_DOCUMENTATION_URL: z.optional(z.url()),
  /** e.g. prod, staging, test, dev. */
  DRS_ENVIRONMENT: z.optional(nonEmpty()),
  /** service-info `version`: the version of this service (not of the DRS specification). */
  DRS_SERVICE_VERSION: z._default(nonEmpty(), pkg.version),
});
export type DrsConfig = z.infer<typeof drsEnv>;

export function drsConfigFromEnv(env: NodeJS.ProcessEnv = process.env): DrsConfig {
  return parseEnv(drsEnv, env);
}

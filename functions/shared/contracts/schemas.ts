import * as z from '../zod.js';

/**
 * Schemas the documents of both APIs share. Functions, not constants: only the OpenAPI generator and the contract
 * test call them, so the Lambda bundles carry none of this.
 */

/** Attaches a description to a schema in the document being generated (a zod registry of the generator's). */
export type Describe = <T extends z.core.$ZodType>(schema: T, description: string) => T;

/**
 * The one error body of both APIs (functions/shared/errors.ts; standardErrorBody in http/error-response.ts).
 * `extra` are the structured facts (AppError.details) an API's errors may carry beside the message.
 */
export function errorSchema(describe: Describe, extra: Record<string, z.core.$ZodType> = {}) {
  return z.strictObject({
    error: z.strictObject({
      code: describe(z.string(), 'Stable machine-readable code: validation_error, not_found, conflict, ...'),
      message: describe(z.string(), 'What went wrong, for people; a 5xx names only the request id'),
      fields: z.optional(
        describe(
          z.record(z.string(), z.array(z.string())),
          'Each invalid field (or query parameter) with what is wrong with it',
        ),
      ),
      ...extra,
    }),
  });
}

/** The list envelope of functions/shared/list.ts. */
export function pageOf<T extends z.core.$ZodType>(describe: Describe, item: T) {
  const link = describe(
    z.nullable(z.string().check(z.url())),
    'Absolute URL of the adjacent page, keeping every other query parameter; null at either end',
  );
  return z.strictObject({
    count: describe(z.number().check(z.int(), z.nonnegative()), 'How many records match, over all pages'),
    next: link,
    previous: link,
    results: z.array(item),
  });
}

/** GET /health. */
export function healthSchema() {
  return z.strictObject({
    status: z.literal('ok'),
    /** The release of the code that answers (package.json, semver). */
    version: z.string(),
  });
}

import { ValidationError } from '../errors.js';
import * as z from '../zod.js';

/** Validates input with zod; failures become a 400 that names each field. */
export function parse<S extends z.core.$ZodType>(schema: S, input: unknown, what = 'body'): z.output<S> {
  const result = z.safeParse(schema, input ?? (what === 'body' ? {} : input));
  if (result.success) return result.data;
  const fields: Record<string, string[]> = {};
  for (const issue of result.error.issues) {
    const key = issue.path.length ? issue.path.join('.') : what;
    const message =
      issue.code === 'unrecognized_keys' ? `unknown field(s): ${issue.keys.join(', ')}` : issue.message;
    fields[key] = [...(fields[key] ?? []), message];
  }
  throw new ValidationError(`Invalid ${what}: ${Object.keys(fields).join(', ')}`, fields, {
    cause: result.error,
  });
}

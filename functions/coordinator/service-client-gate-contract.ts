import * as z from '../shared/zod.js';

/**
 * What the TaskServices function sends the service-client gate and what it answers (functions/coordinator/
 * service-client-gate.ts): the Invoke payloads, checked with zod on both sides.
 */
/** The one scope the gate makes clients of: the task services' (lib/auth.ts SERVICE_SCOPE). */
export const GATE_SCOPE = 'coordinator/service';

export const gateRequestSchema = z.discriminatedUnion('action', [
  z.object({
    action: z.literal('create'),
    name: z.string().check(z.minLength(1), z.maxLength(200)),
    scope: z.string().check(z.maxLength(200)),
  }),
  z.object({ action: z.literal('delete'), clientId: z.string().check(z.minLength(1), z.maxLength(256)) }),
  z.object({
    action: z.literal('replace_secret'),
    clientId: z.string().check(z.minLength(1), z.maxLength(256)),
  }),
]);

export const gateAnswerSchema = z.union([
  z.object({ ok: z.literal(true), clientId: z.string(), clientSecret: z.string() }),
  z.object({ ok: z.literal(true), deleted: z.string() }),
  z.object({ ok: z.literal(true), replaced: z.string(), clientSecret: z.string() }),
  z.object({
    ok: z.literal(false),
    error: z.object({ status: z.number(), code: z.string(), message: z.string() }),
  }),
]);

export type GateAnswer = z.infer<typeof gateAnswerSchema>;

import * as z from 'zod/mini';
import {
  ACTION_RULES,
  ActionRequest,
  CALLBACK_TRANSITIONS,
  CallbackAnswer,
  CancelRequest,
  CoordinatorError,
  ErrorReply,
  GetStatusRequest,
  InitializeRequest,
  PublishRequest,
  REPLY_STATES,
  REQUEST_ID_HEADER,
  ServiceStatus,
  SIGNATURE_TOLERANCE_SECONDS,
  StartRequest,
  TASK_ACTIONS,
  TASK_SERVICE_AUDIENCE,
  TASK_SERVICE_SCOPE,
  TaskCallback,
  TaskReply,
} from '#packages/task-service/src/contract.js';

/**
 * openapi/task-service.json: the API every task service implements, from the zod contract of the task-service kit
 * (packages/task-service/src/contract.ts), by zod's own JSON Schema output like the coordinator's and the file
 * service's documents (lib/openapi/generate.ts). Here the coordinator is the client: the document describes what it
 * sends and what it accepts, and, as an OpenAPI 3.1 webhook, the callback a service sends back to the coordinator.
 */
type Json = Record<string, unknown>;

/** Named schemas: the components of the document, in this order. */
const SCHEMAS = {
  ServiceStatus,
  InitializeRequest,
  StartRequest,
  GetStatusRequest,
  PublishRequest,
  CancelRequest,
  ActionRequest,
  TaskReply,
  Error: ErrorReply,
  TaskCallback,
  CallbackAnswer,
  CoordinatorError,
} satisfies Record<string, z.core.$ZodType>;

const DESCRIPTIONS: Partial<Record<keyof typeof SCHEMAS, string>> = {
  ServiceStatus:
    'The service is ready for tasks: its `name`, a `message` for people and `version`, the service’s own software ' +
    'version, all three required.',
  ActionRequest: 'One of the five actions, told apart by `action`; any other action is a 400.',
  TaskReply:
    'The task as the service sees it, for every action. `kf_id` is the task id (the spec’s name for it); ' +
    '`progress` an integer percentage; `date_submitted` when the service received the task.',
  Error: 'Every non-200 answer: a message for people, optionally a code for programs.',
  TaskCallback:
    'A new state, progress, or both; no other field (400). Allowed changes of state: ' +
    Object.entries(CALLBACK_TRANSITIONS)
      .map(([from, to]) => `${from} → ${to.length ? to.join(', ') : 'none'}`)
      .join('; ') +
    '. Repeating the current state only updates the progress.',
  CallbackAnswer:
    'The task as the coordinator has it recorded (the coordinator’s Task, of which only these fields matter here).',
  CoordinatorError: 'The coordinator’s error answer (docs/api.md, Errors).',
};

const json = (ref: string) => ({ 'application/json': { schema: { $ref: `#/components/schemas/${ref}` } } });
const errorAnswer = (description: string) => ({ description, content: json('Error') });

/** What each action does, from the contract's rules: the operation's description says it per action. */
function actionTable(): string {
  const rows = TASK_ACTIONS.map((action) => {
    const rules = Object.entries(ACTION_RULES[action])
      .map(([from, to]) => `${from}: ${to === 'same' ? 'as is' : to === 'reject' ? '503' : to}`)
      .join(', ');
    return `| \`${action}\` | ${rules} | ${REPLY_STATES[action].join(', ')} |`;
  });
  return [
    '| Action | What it does to the task, by its state (as is: answered unchanged) | States a 200 may carry |',
    '| --- | --- | --- |',
    ...rows,
  ].join('\n');
}

const signatureHeader = (name: string, description: string, pattern?: string): Json => ({
  name,
  in: 'header',
  required: true,
  description,
  schema: { type: 'string', ...(pattern ? { pattern } : {}) },
});

export function generateTaskServiceDocument(version: string): Json {
  const registry = z.registry<{ id?: string; description?: string }>();
  for (const [id, schema] of Object.entries(SCHEMAS))
    registry.add(schema, { id, description: DESCRIPTIONS[id as keyof typeof SCHEMAS] });
  const components = z.toJSONSchema(registry, {
    io: 'output',
    uri: (id) => `#/components/schemas/${id}`,
    unrepresentable: 'any',
    override: (ctx) => {
      // The refinement "state or progress" is not JSON Schema zod can write; this is its equivalent.
      if (ctx.zodSchema === TaskCallback) ctx.jsonSchema.minProperties = 1;
    },
  }) as { schemas: Record<string, Json> };
  const schemas: Record<string, Json> = {};
  for (const [id, schema] of Object.entries(components.schemas)) {
    const { $schema: _s, $id: _i, ...rest } = schema;
    schemas[id] = rest;
  }
  // zod writes a discriminated union as a plain oneOf; the discriminator lets readers (and Redoc) show each action.
  schemas.ActionRequest.discriminator = {
    propertyName: 'action',
    mapping: Object.fromEntries(
      TASK_ACTIONS.map((a, i) => [
        a,
        `#/components/schemas/${['InitializeRequest', 'StartRequest', 'GetStatusRequest', 'PublishRequest', 'CancelRequest'][i]}`,
      ]),
    ),
  };

  return {
    openapi: '3.1.0',
    info: {
      title: 'Task service API',
      version,
      description:
        'The API every task service implements, so that the data release coordinator can drive it through a ' +
        'release: `GET /status`, and `POST /tasks` with the actions initialize, start, get_status, publish and ' +
        'cancel. The coordinator is the client. docs/task-service-api.md has the whole contract in prose, ' +
        'docs/task-service-authors.md a quickstart with the task-service kit (packages/task-service); ' +
        '`drc task-service check <url>` checks a service against this document. Generated from ' +
        'packages/task-service/src/contract.ts.',
    },
    servers: [
      { url: 'http://127.0.0.1:4000', description: 'The reference task service (npm run task-service)' },
    ],
    tags: [{ name: 'Task service', description: 'What the coordinator calls.' }],
    paths: {
      '/status': {
        get: {
          operationId: 'getStatus',
          tags: ['Task service'],
          summary: 'Health: ready for tasks or not',
          description:
            'Called at registration and every health interval. Not signed (the service may not know its secret ' +
            'yet); it carries the bearer token. A 200 carries `name`, `message` and `version`; anything but a 200 ' +
            'with a string `name` counts as unavailable.',
          security: [{ coordinatorToken: [] }],
          responses: {
            200: { description: 'Ready for tasks', content: json('ServiceStatus') },
            401: errorAnswer('No valid coordinator token'),
            503: errorAnswer('Not ready for tasks'),
          },
        },
      },
      '/tasks': {
        post: {
          operationId: 'postTask',
          tags: ['Task service'],
          summary: 'One action for one task',
          description: [
            'The one channel for every action. Each request is signed for this service (Standard Webhooks: ' +
              '`webhook-id`, `webhook-timestamp`, `webhook-signature`, HMAC-SHA256 of ' +
              '`<webhook-id>.<webhook-timestamp>.<raw body>` with the service’s own secret); refuse (401) one ' +
              `that does not verify, one signed more than ${SIGNATURE_TOLERANCE_SECONDS} seconds ago or ahead, and ` +
              'a `webhook-id` already seen.',
            'Every action may arrive again (a retry, a restart of the coordinator): the second answers like the ' +
              'first, without doing the work twice. Tasks must survive a restart of the service: an action for a ' +
              'task it once initialized is never a 404.',
            actionTable(),
          ].join('\n\n'),
          security: [{ coordinatorToken: [] }],
          parameters: [
            signatureHeader('webhook-id', 'A unique id of this request (`msg_…`); a repeat is a replay'),
            signatureHeader('webhook-timestamp', 'When it was signed, Unix seconds', '^[0-9]+$'),
            signatureHeader(
              'webhook-signature',
              '`v1,<base64>`; during a rotation’s grace period two, separated by a space',
              '^v1,[A-Za-z0-9+/=]+( v1,[A-Za-z0-9+/=]+)*$',
            ),
            {
              name: REQUEST_ID_HEADER,
              in: 'header',
              required: false,
              description:
                'The coordinator’s correlation id of the release’s work: log it, send it back on the callbacks',
              schema: { type: 'string' },
            },
          ],
          requestBody: { required: true, content: json('ActionRequest') },
          responses: {
            200: { description: 'Action accepted: the task as it is now', content: json('TaskReply') },
            400: errorAnswer('Invalid input: not JSON, a field missing or invalid, an unknown action'),
            401: errorAnswer(
              'No valid coordinator token, or a signature that is missing, wrong, stale or replayed',
            ),
            403: errorAnswer(
              'A valid coordinator token without a role the service requires; the coordinator fails the task',
            ),
            404: errorAnswer(
              'No such task (any action but initialize for a task the service never initialized)',
            ),
            503: errorAnswer(
              'Action rejected (e.g. publish before staged). With Retry-After: unavailable for now, and the ' +
                'coordinator retries within the action’s timeout',
            ),
          },
        },
      },
    },
    webhooks: {
      reportTask: {
        patch: {
          operationId: 'reportTask',
          tags: ['Task service'],
          summary: 'The service’s callback: PATCH {coordinator}/tasks/{task_id}',
          description:
            'Sent by the service to the coordinator (`PATCH {COORDINATOR_URL}/tasks/{task_id}`) with a token of ' +
            'its own (client credentials), and the `X-Request-Id` of the action that started the work. Retry a ' +
            '409, 429 or 503 after its Retry-After, a bounded number of times; stop the work when the answer says ' +
            'the task has ended (`state` canceled or failed) or its release has (a 409 naming no allowed state).',
          security: [{ serviceToken: [] }],
          requestBody: { required: true, content: json('TaskCallback') },
          responses: {
            200: {
              description: 'Recorded: the task as the coordinator has it',
              content: json('CallbackAnswer'),
            },
            400: {
              description: 'A field that is not allowed, or invalid',
              content: json('CoordinatorError'),
            },
            401: { description: 'No valid service token', content: json('CoordinatorError') },
            403: {
              description: 'The token is not the one of the task’s service (or lacks the service role)',
              content: json('CoordinatorError'),
            },
            404: { description: 'No such task', content: json('CoordinatorError') },
            409: {
              description:
                'The change of state is not allowed from the task’s state or in its release’s phase (the ' +
                'message lists what is allowed; none once the release is over). With Retry-After: concurrent ' +
                'changes outlasted the coordinator’s retries, nothing was written: send it again after that long',
              content: json('CoordinatorError'),
            },
            429: {
              description:
                'Too many requests (a gateway in front of the coordinator): nothing was written; send the same ' +
                'report again after Retry-After',
              headers: { 'Retry-After': { description: 'Seconds to wait', schema: { type: 'integer' } } },
            },
            503: {
              description:
                'The coordinator’s data store kept throttling the write (`busy`): nothing was written; send the ' +
                'same report again after Retry-After',
              headers: { 'Retry-After': { description: 'Seconds to wait', schema: { type: 'integer' } } },
              content: json('CoordinatorError'),
            },
          },
        },
      },
    },
    components: {
      schemas,
      securitySchemes: {
        coordinatorToken: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description:
            'The coordinator’s token, from client credentials at the identity provider. Verify it against the ' +
            `issuer’s JWKS: signature, issuer, expiry, and audience \`${TASK_SERVICE_AUDIENCE}\` (locally, and at ` +
            'any issuer that sets `aud`); on Cognito, whose access tokens have no `aud`, the scope ' +
            `\`${TASK_SERVICE_SCOPE}\` and the coordinator’s \`client_id\`. Refuse (401) any other token: a ` +
            'user’s or an admin’s, another service’s, one for the coordinator’s own APIs.',
        },
        serviceToken: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description:
            'The service’s own token (client credentials of its client, role `service`), reused until shortly ' +
            'before it expires.',
        },
      },
    },
  };
}

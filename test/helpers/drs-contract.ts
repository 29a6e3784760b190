import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv, type ValidateFunction } from 'ajv';
import ajvFormats from 'ajv-formats';
import { expect } from 'vitest';
import { parse } from 'yaml';

/**
 * Checks answers against the official GA4GH DRS 1.5.0 OpenAPI, used as it is (test/fixtures/ga4gh): the status
 * code must be one the spec declares for that path and method, and the body must validate against the schema of
 * that response. The whole OpenAPI document is added to ajv under one base URI, so the schemas' own internal
 * `$ref`s (`#/components/schemas/...`) resolve inside it; nothing is copied out of it. Response objects that are
 * themselves `$ref`s (`#/components/responses/...`) are OpenAPI references, not JSON Schema ones, and are followed
 * here before ajv is pointed at their schema.
 */
const SPEC_FILE = fileURLToPath(new URL('../fixtures/ga4gh/drs-1.5.0.openapi.yaml', import.meta.url));
const SPEC_URI = 'https://spec.test/drs-1.5.0.openapi.json';
export const DRS_BASE_PATH = '/ga4gh/drs/v1';

interface ResponseObject {
  $ref?: string;
  content?: Record<string, { schema?: unknown }>;
}
interface OpenApi {
  paths: Record<string, Record<string, { responses: Record<string, ResponseObject> }>>;
}

export const drsSpec = parse(readFileSync(SPEC_FILE, 'utf8')) as OpenApi;

const ajv = new Ajv({ allErrors: true, strict: true });
// ajv-formats is CommonJS: its plugin is module.exports and, again, module.exports.default.
ajvFormats.default(ajv);
// What ajv meets that is not JSON Schema: the OpenAPI document's own top-level fields (the document is added as one
// schema so that its internal references resolve) and OpenAPI 3.0's `example` annotation inside schemas. Any other
// unknown keyword still fails compilation (strict mode).
ajv.addVocabulary([
  'openapi',
  'info',
  'servers',
  'security',
  'tags',
  'paths',
  'components',
  'x-tagGroups',
  'example',
]);
ajv.addSchema(drsSpec as object, SPEC_URI);

const pointerSegment = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');

/** Follows a local `#/a/b/c` reference inside the spec. */
function resolvePointer(ref: string): unknown {
  if (!ref.startsWith('#/')) throw new Error(`not a local reference: ${ref}`);
  let node: unknown = drsSpec;
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    node = (node as Record<string, unknown>)[key];
    if (node === undefined) throw new Error(`unresolved reference ${ref}`);
  }
  return node;
}

const validators = new Map<string, ValidateFunction>();
function validatorAt(pointer: string): ValidateFunction {
  let v = validators.get(pointer);
  if (!v) {
    v = ajv.compile({ $ref: `${SPEC_URI}${pointer}` });
    validators.set(pointer, v);
  }
  return v;
}

/** The spec's path template for a request path under the DRS base path; static templates win (/objects/access). */
export function templateOf(path: string): string {
  const bare = new URL(path, 'http://x').pathname.slice(DRS_BASE_PATH.length);
  const templates = Object.keys(drsSpec.paths).sort((a, b) => a.split('{').length - b.split('{').length);
  const hit = templates.find((t) => new RegExp(`^${t.replace(/\{\w+\}/g, '[^/]+')}$`).test(bare));
  if (!hit) throw new Error(`no DRS path template matches ${path}`);
  return hit;
}

export interface Answer {
  status: number;
  headers: Headers;
  body: unknown;
  text: string;
}

/**
 * Asserts that `answer` is one the spec allows for `method` on `path`: a declared status code, and a body that
 * validates against that response's schema (or no body where the spec declares no content).
 */
export function expectDrsContract(method: string, path: string, answer: Answer): void {
  const template = templateOf(path);
  const operation = drsSpec.paths[template]?.[method.toLowerCase()];
  if (!operation) throw new Error(`the DRS spec has no ${method} ${template}`);
  const where = `${method} ${template} answered ${answer.status}: ${answer.text.slice(0, 300)}`;
  expect(Object.keys(operation.responses), where).toContain(String(answer.status));

  let pointer = `#/paths/${pointerSegment(template)}/${method.toLowerCase()}/responses/${answer.status}`;
  let response = operation.responses[String(answer.status)];
  if (response.$ref) {
    pointer = response.$ref;
    response = resolvePointer(response.$ref) as ResponseObject;
  }
  const json = response.content?.['application/json'];
  if (!json?.schema) {
    expect(answer.text, `${where}: the spec declares no body`).toBe('');
    return;
  }
  expect(answer.headers.get('content-type'), where).toMatch(/^application\/json/);
  const validate = validatorAt(`${pointer}/content/application~1json/schema`);
  const valid = validate(answer.body);
  expect(valid, `${where}\n${ajv.errorsText(validate.errors, { separator: '\n' })}`).toBe(true);
}

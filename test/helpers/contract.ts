import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import type { Exchange } from '#local/http-server.js';

/**
 * The contract test: every answer the integration tests receive from the in-process APIs (test/helpers/
 * coordinator-api.ts, test/integration/files/harness.ts pass `observe: recordExchange(api)` to the local server) is
 * checked against the committed OpenAPI document of its API: the status must be declared for that route, and the
 * body must validate (ajv, JSON Schema 2020-12) against the schema declared for that status. test/setup/contract.ts
 * checks each test file's answers after it ran and writes which operations were exercised under
 * .test-data/contract/, from which test/contract/coverage.contract.test.ts asserts that every route of
 * both documents was exercised at least once.
 */
export type ApiName = 'coordinator' | 'files';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const COVERAGE_DIR = join(ROOT, '.test-data', 'contract');

interface Operation {
  operationId: string;
  responses: Record<string, ResponseObject>;
}
interface ResponseObject {
  $ref?: string;
  content?: Record<string, { schema?: unknown }>;
}
export interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { responses?: Record<string, ResponseObject> };
}

const documents = new Map<ApiName, Document>();
export function documentOf(api: ApiName): Document {
  let doc = documents.get(api);
  if (!doc) {
    doc = JSON.parse(readFileSync(join(ROOT, 'openapi', `${api}.json`), 'utf8')) as Document;
    documents.set(api, doc);
  }
  return doc;
}

// Union types (`type: ['string', 'null']`) are how zod writes nullable fields.
const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
// ajv-formats is CommonJS: its plugin is module.exports and, again, module.exports.default.
ajvFormats.default(ajv);
// The document is added whole, so that its `#/components/schemas/…` references resolve; these are its own fields.
ajv.addVocabulary(['openapi', 'info', 'servers', 'security', 'tags', 'paths', 'components']);
for (const api of ['coordinator', 'files'] as const) ajv.addSchema(documentOf(api) as object, uriOf(api));
function uriOf(api: ApiName) {
  return `https://contract.test/${api}.json`;
}

const validators = new Map<string, ValidateFunction>();
function validatorAt(api: ApiName, pointer: string): ValidateFunction {
  const key = `${api}${pointer}`;
  let v = validators.get(key);
  if (!v) {
    v = ajv.compile({ $ref: `${uriOf(api)}${pointer}` });
    validators.set(key, v);
  }
  return v;
}

const segment = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

/** The document's path template of a request path: static segments win over parameters (/objects/access). */
export function templateOf(doc: Document, path: string): string | undefined {
  const templates = Object.keys(doc.paths).sort((a, b) => a.split('{').length - b.split('{').length);
  return templates.find((t) => new RegExp(`^${t.replace(/\{\w+\}/g, '[^/]+')}/?$`).test(path));
}

export interface Recorded extends Exchange {
  api: ApiName;
}

const recorded: Recorded[] = [];
/** The observer an in-process API passes to createLocalApi: records every answer for the check after the file. */
export const recordExchange = (api: ApiName) => (exchange: Exchange) => {
  recorded.push({ ...exchange, api });
};

/** What one test file exercised: `<api> <METHOD> <template>` -> statuses seen. */
export type Coverage = Record<string, number[]>;

/** The error model of a path: DRS routes answer DRS's body. */
const errorModelOf = (template: string | undefined) =>
  template?.startsWith('/ga4gh/drs/') ? 'DrsError' : 'Error';

/** Checks one answer; returns what is wrong with it (empty when it keeps the contract), and what it exercised. */
export function checkExchange(x: Recorded): { problems: string[]; exercised?: string } {
  const doc = documentOf(x.api);
  const where = `${x.api}: ${x.method} ${x.path} answered ${x.status}`;
  const text = x.body.toString('utf8');
  const problems: string[] = [];
  const json = (): unknown => {
    try {
      return JSON.parse(text);
    } catch {
      problems.push(`${where}: the body is not JSON: ${text.slice(0, 200)}`);
      return undefined;
    }
  };
  const validate = (pointer: string, body: unknown) => {
    const v = validatorAt(x.api, pointer);
    if (!v(body))
      problems.push(
        `${where}: ${ajv.errorsText(v.errors, { separator: '; ' })}\n  body: ${text.slice(0, 400)}`,
      );
  };

  // A CORS preflight is the gateway's (or the local server's) to answer, not a route's.
  if (x.method === 'OPTIONS' && x.requestHeaders['access-control-request-method']) return { problems };
  const template = templateOf(doc, x.path);
  const item = template ? doc.paths[template] : undefined;
  const method = x.method === 'HEAD' ? 'get' : x.method.toLowerCase();
  const operation = item?.[method];
  if (!operation || !template) {
    // No such path (the gateway's 404), a method the path does not serve (405), or a request the server refused
    // before routing (413): always the API's error body.
    if (![404, 405, 413].includes(x.status)) problems.push(`${where}: undocumented route`);
    else validate(`#/components/schemas/${errorModelOf(template)}`, json());
    return { problems };
  }
  const exercised = `${x.api} ${x.method === 'HEAD' ? 'GET' : x.method} ${template}`;
  let response = operation.responses[String(x.status)];
  if (!response) {
    problems.push(`${where}: status ${x.status} is not declared for ${exercised} (${operation.operationId})`);
    return { problems, exercised };
  }
  let pointer = `#/paths/${segment(template)}/${method}/responses/${x.status}`;
  if (response.$ref) {
    pointer = response.$ref;
    response = doc.components.responses?.[response.$ref.split('/').pop() ?? ''] ?? {};
  }
  const media = Object.keys(response.content ?? {});
  const contentType = x.headers['Content-Type'] ?? '';
  // An answer in another of its declared media types (TSV beside JSON) has a text body: only its type is checked.
  const textual = media.find((m) => m !== 'application/json' && m !== '*/*' && contentType.startsWith(m));
  if (media.length === 0) {
    if (text !== '') problems.push(`${where}: declared without a body, answered ${text.slice(0, 200)}`);
  } else if (media.includes('application/json') && !textual) {
    if (!/^application\/json/.test(x.headers['Content-Type'] ?? ''))
      problems.push(`${where}: Content-Type ${x.headers['Content-Type']}, not application/json`);
    if (x.method !== 'HEAD') validate(`${pointer}/content/application~1json/schema`, json());
  } else if (!media.includes('*/*') && !media.some((m) => (x.headers['Content-Type'] ?? '').startsWith(m)))
    problems.push(`${where}: Content-Type ${x.headers['Content-Type']}, declared ${media.join(', ')}`);
  return { problems, exercised };
}

/** Checks every answer recorded so far in this test file, and writes what they exercised. */
export function checkRecorded(): string[] {
  const problems: string[] = [];
  const coverage: Coverage = {};
  for (const x of recorded.splice(0)) {
    const result = checkExchange(x);
    problems.push(...result.problems);
    if (result.exercised && result.problems.length === 0)
      coverage[result.exercised] = [...new Set([...(coverage[result.exercised] ?? []), x.status])];
  }
  if (Object.keys(coverage).length) {
    mkdirSync(COVERAGE_DIR, { recursive: true });
    writeFileSync(join(COVERAGE_DIR, `${randomUUID()}.json`), JSON.stringify(coverage));
  }
  // The same problem from many fuzz cases is one problem.
  return [...new Set(problems)];
}

/** The file that lists the function entries whose handler a test file called, and in which mode. */
export const HANDLERS_FILE_PREFIX = 'handlers-';

/** Writes which functions' handlers this test file called (local/handlers.ts records them). */
export function recordCalledHandlers(called: ReadonlyMap<string, string>): void {
  if (!called.size) return;
  mkdirSync(COVERAGE_DIR, { recursive: true });
  writeFileSync(
    join(COVERAGE_DIR, `${HANDLERS_FILE_PREFIX}${randomUUID()}.json`),
    JSON.stringify([...called]),
  );
}

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';

/**
 * openapi/task-service.json as validators (ajv, JSON Schema 2020-12, which OpenAPI 3.1 schemas are): every request
 * the check sends and every answer it receives is held against the document, and so is every callback the service
 * sends back (the document's `reportTask` webhook) and the check's own answer to it. A problem is one line naming
 * what did not match.
 */
const DOCUMENT = fileURLToPath(new URL('../../openapi/task-service.json', import.meta.url));
const URI = 'https://contract.check/task-service.json';

interface Operation {
  requestBody?: { content?: Record<string, { schema?: unknown }> };
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<string, Record<string, Operation>>;
}

export type OperationName = 'getStatus' | 'postTask' | 'reportTask';
const WHERE: Record<OperationName, { base: 'paths' | 'webhooks'; key: string; method: string }> = {
  getStatus: { base: 'paths', key: '/status', method: 'get' },
  postTask: { base: 'paths', key: '/tasks', method: 'post' },
  reportTask: { base: 'webhooks', key: 'reportTask', method: 'patch' },
};

const segment = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

export class Contract {
  private readonly doc: Document;
  private readonly ajv: Ajv2020;
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(path = DOCUMENT) {
    this.doc = JSON.parse(readFileSync(path, 'utf8')) as Document;
    this.ajv = new Ajv2020({ allErrors: true, strict: false, allowUnionTypes: true });
    // ajv-formats is CommonJS: its plugin is module.exports and, again, module.exports.default.
    ajvFormats.default(this.ajv);
    // The document is added whole, so that its `#/components/schemas/…` references resolve.
    this.ajv.addSchema(this.doc as object, URI);
  }

  private operation(name: OperationName): Operation {
    const w = WHERE[name];
    return this.doc[w.base][w.key][w.method];
  }

  private pointer(name: OperationName): string {
    const w = WHERE[name];
    return `#/${w.base}/${segment(w.key)}/${w.method}`;
  }

  private validate(pointer: string, value: unknown): string | undefined {
    let v = this.validators.get(pointer);
    if (!v) {
      v = this.ajv.compile({ $ref: `${URI}${pointer}` });
      this.validators.set(pointer, v);
    }
    if (v(value)) return undefined;
    return (v.errors ?? [])
      .slice(0, 3)
      .map((e) => `${e.instancePath || '(body)'} ${e.message ?? 'is invalid'}`)
      .join('; ');
  }

  /** Why a request body does not match the operation's request schema, or undefined when it does. */
  request(name: OperationName, body: unknown): string | undefined {
    if (!this.operation(name).requestBody) return undefined;
    const why = this.validate(`${this.pointer(name)}/requestBody/content/application~1json/schema`, body);
    return why && `the request does not match openapi/task-service.json (${name}): ${why}`;
  }

  /** Why an answer does not match: a status the operation does not declare, or a body that breaks its schema. */
  response(name: OperationName, status: number, body: unknown): string | undefined {
    const declared = this.operation(name).responses;
    if (!declared[String(status)])
      return `answered ${status}, which openapi/task-service.json does not declare for ${name} (${Object.keys(declared).join(', ')})`;
    if (!declared[String(status)].content?.['application/json']) return undefined;
    const why = this.validate(
      `${this.pointer(name)}/responses/${status}/content/application~1json/schema`,
      body,
    );
    return why && `the ${status} answer does not match openapi/task-service.json (${name}): ${why}`;
  }
}

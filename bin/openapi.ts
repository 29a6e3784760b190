/**
 * `npm run openapi`: writes openapi/coordinator.json and openapi/files.json from the route contracts
 * (lib/openapi/generate.ts) and the TypeScript types of both (openapi/types/*.ts, openapi-typescript), and
 * openapi/task-service.json from the task-service kit's contract (lib/openapi/task-service.ts), and
 * openapi/files.graphql, the file service's GraphQL schema in SDL (functions/files/graphql-schema.ts). The files are
 * committed; test/unit/openapi/documents.test.ts fails when they are stale, so run this after changing a contract.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { schemaSdl } from '#functions/files/graphql-schema.js';
import { API_DESCRIPTIONS } from '#lib/openapi/apis.js';
import { documentText, generateDocument, packageVersion } from '#lib/openapi/generate.js';
import { generateTaskServiceDocument } from '#lib/openapi/task-service.js';
import { typesOf } from '#lib/openapi/types.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
for (const api of API_DESCRIPTIONS) {
  const doc = generateDocument(api, packageVersion());
  const docFile = join(ROOT, 'openapi', `${api.name}.json`);
  const typesFile = join(ROOT, 'openapi', 'types', `${api.name}.ts`);
  mkdirSync(dirname(docFile), { recursive: true });
  mkdirSync(dirname(typesFile), { recursive: true });
  writeFileSync(docFile, documentText(doc));
  writeFileSync(typesFile, await typesOf(doc));
  const kb = (Buffer.byteLength(documentText(doc)) / 1024).toFixed(0);
  process.stdout.write(`openapi/${api.name}.json (${kb} KB), openapi/types/${api.name}.ts\n`);
}

// The API task services implement: no client types (the coordinator's client and the kit use the zod contract).
const taskService = documentText(generateTaskServiceDocument(packageVersion()));
writeFileSync(join(ROOT, 'openapi', 'task-service.json'), taskService);
process.stdout.write(
  `openapi/task-service.json (${(Buffer.byteLength(taskService) / 1024).toFixed(0)} KB)\n`,
);

writeFileSync(join(ROOT, 'openapi', 'files.graphql'), schemaSdl());
process.stdout.write('openapi/files.graphql\n');

import { randomBytes } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AwsHttp, DYNAMODB_SERVICE } from '../../../functions/adapters/aws-http.js';
import type { Documents } from '../../../functions/adapters/dynamodb/documents.js';
import { DynamoAuditLog } from '../../../functions/adapters/dynamodb/files-audit.js';
import { DynamoFileRepository } from '../../../functions/adapters/dynamodb/files-repository.js';
import {
  DynamoDevTokenRepository,
  DynamoSignedTokenRepository,
} from '../../../functions/adapters/dynamodb/files-tokens.js';
import { SdkDocuments } from '../../../functions/adapters/dynamodb/sdk-documents.js';
import { SignedDocuments } from '../../../functions/adapters/dynamodb/signed-documents.js';
import { DynamoStudyRepository, studyDirectory } from '../../../functions/adapters/dynamodb/studies.js';
import { requestHandler } from '../../../functions/adapters/request-handler.js';
import type {
  AuditRecord,
  DevTokenRecord,
  FileRecord,
  SignedTokenRecord,
  VersionRecord,
} from '../../../functions/files/model.js';
import { createTables, localClient, tableEnv } from '../../../local/dynamodb-local.js';

/**
 * The file service's repositories on DynamoDB Local through both Documents adapters: the SDK's document client
 * (every function) and signed requests (FilesGraphql). One scenario touches every repository method, the failing
 * conditions and cancelled transactions included, once through each adapter on tables of its own; the two
 * transcripts must be identical, and what one adapter wrote the other must read back the same.
 */

const endpoint = () => inject('ddbEndpoint');
const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };

function adapters(): Record<'sdk' | 'signed', Documents> {
  const sdk = new SdkDocuments(
    DynamoDBDocumentClient.from(
      new DynamoDBClient({
        endpoint: endpoint(),
        region: 'us-east-1',
        credentials,
        requestHandler: requestHandler(),
      }),
      { marshallOptions: { removeUndefinedValues: true } },
    ),
  );
  const signed = new SignedDocuments(
    new AwsHttp(DYNAMODB_SERVICE, {
      endpoint: endpoint(),
      region: 'us-east-1',
      credentials,
      requestHandler: requestHandler(),
    }),
    { marshallOptions: { removeUndefinedValues: true } },
  );
  return { sdk, signed };
}

async function freshTables() {
  const prefix = `t${randomBytes(4).toString('hex')}`;
  const admin = localClient(endpoint());
  await createTables(admin, prefix);
  admin.destroy();
  return tableEnv(prefix);
}

const AT = '2026-03-04T05:06:07.000000Z';
const STUDY = 'SD_AAAAAAAA';
const file: FileRecord = {
  id: 'SF_BBBBBBBB',
  study_id: STUDY,
  name: 'reads ünïcödé.csv',
  description: 'a "quoted" description',
  created_at: AT,
  created_by: 'alice',
};
const version = (n: number, size: number, multipart = false): VersionRecord => ({
  id: `FV_CCCCCCC${n}`,
  file_id: file.id,
  study_id: STUDY,
  key: `studies/${STUDY}/files/${file.id}/versions/FV_CCCCCCC${n}`,
  file_name: `reads-${n}.csv`,
  size,
  content_type: 'text/csv',
  sha256: String(n).repeat(64).slice(0, 64),
  state: 'pending',
  created_at: `2026-03-04T05:06:0${n}.000000Z`,
  created_by: 'alice',
  confirmed_at: null,
  multipart: multipart ? { upload_id: 'up/1+x', part_size: 5 * 1024 * 1024, part_count: 3 } : null,
});
const audit = (id: string, action: AuditRecord['action'], extra: Partial<AuditRecord> = {}): AuditRecord => ({
  id,
  at: AT,
  action,
  method: 'bearer',
  actor: 'alice',
  dev_token: null,
  study_id: STUDY,
  file_id: file.id,
  version_id: null,
  source_ip: '192.0.2.1',
  user_agent: 'curl/8',
  ...extra,
});
const signedToken: SignedTokenRecord = {
  study_id: STUDY,
  file_id: file.id,
  version_id: 'FV_CCCCCCC1',
  created_at: AT,
  created_by: 'alice',
  dev_token: null,
  dev_token_hash: null,
  expires_at_ms: Date.parse('2026-03-04T05:07:00Z'),
  claimed: false,
};
const devToken: DevTokenRecord = {
  name: 'ci-bot',
  hint: 'sfdt_abc',
  created_at: AT,
  created_by: 'admin',
  expires_at: '2027-01-01T00:00:00.000000Z',
  studies: ['SD_AAAAAAA1'],
};

/** Every repository method of the file service, in an order where each step has something to find. */
async function scenario(doc: Documents, tables: Record<string, string>) {
  const t = tables.FILES_TABLE;
  const files = new DynamoFileRepository(doc, t);
  const signed = new DynamoSignedTokenRepository(doc, t);
  const dev = new DynamoDevTokenRepository(doc, t);
  const log = new DynamoAuditLog(doc, t);
  const studies = new DynamoStudyRepository(doc, { studies: tables.STUDIES_TABLE });
  const directory = studyDirectory(studies);
  const [v1, v2, v3] = [version(1, 11), version(2, 12 * 1024 * 1024, true), version(3, 0)];
  const page = { limit: 2, offset: 0 };
  const steps: Record<string, unknown> = {};
  const step = async (name: string, run: () => Promise<unknown>) => {
    try {
      steps[name] = await run();
    } catch (err) {
      steps[name] = { threw: (err as Error).name, message: (err as Error).message };
    }
  };

  await step('study mirrored', () =>
    studies.upsertMirrored({ id: STUDY, name: 'S', version: '1.0', visible: true, createdAt: AT }),
  );
  await step('study exists', () => directory.exists(STUDY));
  await step('other study exists', () => directory.exists('SD_ZZZZZZZZ'));
  await step('missing studies', () => studies.missing([STUDY, 'SD_ZZZZZZZZ']));
  await step('create file', () => files.createFile(file, v1, audit('A1', 'upload.create')));
  await step('create it again', () => files.createFile(file, v1, audit('A1b', 'upload.create')));
  await step('add version 2', () => files.addVersion(v2, audit('A2', 'upload.create')));
  await step('add version 3', () => files.addVersion(v3, audit('A3', 'upload.create')));
  await step('add to a missing file', () =>
    files.addVersion({ ...v1, id: 'FV_DDDDDDDD', file_id: 'SF_ZZZZZZZZ' }, audit('A4', 'upload.create')),
  );
  await step('get file', () => files.getFile(file.id));
  await step('get missing file', () => files.getFile('SF_ZZZZZZZZ'));
  await step('file with versions', () => files.getFileWithVersions(file.id));
  await step('get version', () => files.getVersion(file.id, v2.id));
  await step('get files, batched', () => files.getFiles([file.id, 'SF_ZZZZZZZZ', file.id]));
  await step('get versions, batched', () =>
    files.getVersions([
      { fileId: file.id, versionId: v2.id },
      { fileId: file.id, versionId: 'FV_ZZZZZZZZ' },
      { fileId: file.id, versionId: v1.id },
    ]),
  );
  await step('file of a version', () => files.fileIdOfVersion(v3.id));
  await step('list files', () => files.listFiles(STUDY, page));
  await step('list versions, page 1', () => files.listVersions(file.id, page));
  await step('list versions, page 2', () => files.listVersions(file.id, { limit: 2, offset: 2 }));
  await step('confirm version 1', () =>
    files.finishUpload(v1, { state: 'available', confirmedAt: AT }, audit('A5', 'upload.confirm')),
  );
  await step('confirm it again', () =>
    files.finishUpload(v1, { state: 'available', confirmedAt: AT }, audit('A6', 'upload.confirm')),
  );
  await step('hand version 2 to the worker', () =>
    files.finishUpload(v2, { state: 'verifying', confirmedAt: AT }, audit('A7', 'upload.confirm')),
  );
  await step('worker finishes version 2', () =>
    files.finishUpload(v2, { state: 'available', confirmedAt: AT, from: 'verifying' }, null),
  );
  await step('totals', () => files.availableTotals());
  await step('mint signed token', () =>
    signed.create('hash-1', signedToken, audit('A8', 'signed_url.create')),
  );
  const target = { studyId: STUDY, fileId: file.id, versionId: 'FV_CCCCCCC1' };
  const now = Date.parse('2026-03-04T05:06:30Z');
  await step('claim it', () => signed.claim('hash-1', target, now, 'claim-1'));
  await step('claim it twice', () => signed.claim('hash-1', target, now, 'claim-2'));
  await step('claim for another version', () =>
    signed.claim('hash-1', { ...target, versionId: v2.id }, now, 'c'),
  );
  await step('release the claim', () => signed.release('hash-1', 'claim-1'));
  await step('claim after release', () => signed.claim('hash-1', target, now, 'claim-3'));
  await step('claim once expired', () =>
    signed.claim('hash-1', target, Date.parse('2027-01-01T00:00:00Z'), 'x'),
  );
  await step('create dev token', () =>
    dev.create('dev-hash', devToken, audit('A9', 'dev_token.create', { dev_token: 'ci-bot' })),
  );
  await step('create dev token again', () =>
    dev.create('dev-hash-2', devToken, audit('A10', 'dev_token.create', { dev_token: 'ci-bot' })),
  );
  await step('find dev token', () => dev.findByHash('dev-hash'));
  await step('list dev tokens', () => dev.list({ limit: 10, offset: 0 }));
  await step('delete dev token', () =>
    dev.delete('ci-bot', (tok) => audit('A11', 'dev_token.delete', { dev_token: tok.name })),
  );
  await step('delete it again', () => dev.delete('ci-bot', () => audit('A12', 'dev_token.delete')));
  await step('find deleted dev token', () => dev.findByHash('dev-hash'));
  await step('record download', () =>
    log.record(audit('A13', 'download', { version_id: v1.id, method: 'signed_url' })),
  );
  await step('audit of the study', () => log.query({ studyId: STUDY }, { limit: 50, offset: 0 }));
  await step('audit of a user', () =>
    log.query({ actor: 'alice', fileId: file.id }, { limit: 3, offset: 1 }),
  );
  await step('delete version 3', () => files.deleteVersion(v3, audit('A14', 'version.delete')));
  await step('totals after', () => files.availableTotals());
  await step('begin file delete', () => files.beginDelete(file.id));
  await step('add during delete', () =>
    files.addVersion({ ...v3, id: 'FV_EEEEEEEE' }, audit('A15', 'upload.create')),
  );
  const rest = await files.getFileWithVersions(file.id);
  await step('delete file', () => files.deleteFile(file, rest?.versions ?? [], audit('A16', 'file.delete')));
  await step('file after delete', () => files.getFileWithVersions(file.id));
  await step('totals at the end', () => files.availableTotals());
  return steps;
}

describe('the file-service repositories through both DynamoDB adapters', () => {
  const tables: Record<string, Record<string, string>> = {};
  const docs = adapters();
  beforeAll(async () => {
    tables.sdk = await freshTables();
    tables.signed = await freshTables();
  });
  afterAll(() => (docs.sdk as SdkDocuments).client.destroy());

  it('give the same answers to the same scenario, step by step', async () => {
    const sdk = await scenario(docs.sdk, tables.sdk);
    const signed = await scenario(docs.signed, tables.signed);
    // The scenario means something: creations, refusals and the claim race come out as the use cases expect.
    expect(sdk['create file']).toBe('created');
    expect(sdk['create it again']).toBe('id_collision');
    expect(sdk['add to a missing file']).toBe('file_missing');
    expect(sdk['claim it']).toMatchObject({ claimed: true });
    expect(sdk['claim it twice']).toBeNull();
    expect(sdk['claim after release']).toMatchObject({ claimed: true });
    expect(sdk['create dev token again']).toBe(false);
    expect(sdk.totals).toEqual({ versions: 2, bytes: 11 + 12 * 1024 * 1024 });
    expect(sdk['file after delete']).toBeNull();
    for (const name of Object.keys(sdk)) expect(signed[name], name).toEqual(sdk[name]);
    expect(Object.keys(signed)).toEqual(Object.keys(sdk));
  });

  it('read back what the other one wrote', async () => {
    const shared = await freshTables();
    const writer = new DynamoFileRepository(docs.signed, shared.FILES_TABLE);
    const reader = new DynamoFileRepository(docs.sdk, shared.FILES_TABLE);
    expect(await writer.createFile(file, version(1, 11, true), audit('B1', 'upload.create'))).toBe('created');
    expect(await reader.getFileWithVersions(file.id)).toEqual(await writer.getFileWithVersions(file.id));
    const back = new DynamoDevTokenRepository(docs.sdk, shared.FILES_TABLE);
    expect(await back.create('h', devToken, audit('B2', 'dev_token.create'))).toBe(true);
    expect(await new DynamoDevTokenRepository(docs.signed, shared.FILES_TABLE).findByHash('h')).toEqual(
      await back.findByHash('h'),
    );
  });
});

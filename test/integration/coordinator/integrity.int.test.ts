import { DynamoDBDocumentClient, GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Documents } from '#functions/adapters/dynamodb/documents.js';
import { DynamoEventRepository } from '#functions/adapters/dynamodb/events.js';
import { DynamoReleaseRepository } from '#functions/adapters/dynamodb/releases/index.js';
import { DynamoStudyRepository } from '#functions/adapters/dynamodb/studies.js';
import { DynamoTaskServiceRepository } from '#functions/adapters/dynamodb/task-services.js';
import { localClient } from '#local/dynamodb-local.js';
import { useLocalTables } from '#test/helpers/tables.js';

/**
 * Writes that must never lose data or wedge a release: concurrent release-note updates, and items that would grow
 * past DynamoDB's 400 KB item limit (refused before the write, with a 400 naming the field).
 */
let doc: DynamoDBDocumentClient;
let tables: { coordinator: string; studies: string };
let releases: DynamoReleaseRepository;
let services: DynamoTaskServiceRepository;
let events: DynamoEventRepository;
const STUDY = 'SD_00000001';

beforeAll(async () => {
  const env = await useLocalTables();
  doc = DynamoDBDocumentClient.from(localClient(inject('ddbEndpoint')), {
    marshallOptions: { removeUndefinedValues: true },
  });
  tables = { coordinator: env.COORDINATOR_TABLE, studies: env.STUDIES_TABLE };
  releases = new DynamoReleaseRepository(doc, tables);
  services = new DynamoTaskServiceRepository(doc, tables);
  events = new DynamoEventRepository(doc, tables);
  await new DynamoStudyRepository(doc, tables).upsertMirrored({
    id: STUDY,
    name: 's',
    version: null,
    visible: true,
    createdAt: null,
  });
});
afterAll(() => doc?.destroy());

async function newRelease(description = '') {
  const guard = await services.readGuard();
  return releases.create(
    { name: 'r', description, studies: [STUDY], version: '0.0.1', tags: [], author: 'a', isMajor: false },
    [],
    guard,
    () => [],
  );
}

/** A document client that runs `before` once, just before its first transaction: a deterministic interleaving. */
function interleaved(before: () => Promise<unknown>): Documents {
  let done = false;
  const send = async (command: unknown) => {
    if (!done && command instanceof TransactWriteCommand) {
      done = true;
      await before();
    }
    return doc.send(command as TransactWriteCommand);
  };
  return { send: send as Documents['send'] };
}

describe('release notes updated concurrently', () => {
  it('never lose an update: both changes survive', async () => {
    const { release } = await newRelease();
    const note = await releases.createNote({
      releaseId: release.id,
      studyId: null,
      description: 'd0',
      author: 'a0',
    });
    const racer = new DynamoReleaseRepository(
      interleaved(() => releases.updateNote(note.id, { author: 'by-the-other-writer' })),
      tables,
    );
    await racer.updateNote(note.id, { description: 'by-this-writer' });
    const stored = await releases.getNote(note.id);
    expect(stored).toMatchObject({ description: 'by-this-writer', author: 'by-the-other-writer' });
  });
});

describe('the 400 KB item limit', () => {
  const big = 'x'.repeat(420 * 1024);

  it('refuses a release whose item would exceed it, naming the field, and writes nothing', async () => {
    const before = (await releases.list({}, { limit: 100, offset: 0 })).count;
    const err = await newRelease(big).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 400, fields: { description: expect.any(Array) } });
    expect((await releases.list({}, { limit: 100, offset: 0 })).count).toBe(before);
  });

  it('refuses an update that would push the release item past it, leaving the release as it was', async () => {
    const { release } = await newRelease('small');
    const err = await releases.update(release.id, { description: big }).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 400, fields: { description: expect.any(Array) } });
    expect((await releases.load(release.id))?.release.description).toBe('small');
  });

  it('keeps room on the release item so that the orchestration can always record a failure', async () => {
    const { release } = await newRelease('y'.repeat(300 * 1024));
    // The largest record the API can store still leaves the orchestration its room.
    await releases.applyChange({
      releaseId: release.id,
      toState: 'canceling',
      setExtras: { failureReason: 'r'.repeat(500), taskToken: 't'.repeat(8 * 1024) },
    });
    const raw = await doc.send(
      new GetCommand({ TableName: tables.coordinator, Key: { pk: `RE#${release.id}`, sk: 'RE' } }),
    );
    expect(raw.Item?.state).toBe('canceling');
  });

  it('refuses an event whose item would exceed it, naming the field', async () => {
    const err = await events.create({ eventType: 'info', message: big }).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 400, fields: { message: expect.any(Array) } });
  });
});

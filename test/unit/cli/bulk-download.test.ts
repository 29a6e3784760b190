import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { filesClient } from '#cli/api.js';
import { bulkDownload } from '#cli/bulk-download.js';
import type { Output } from '#cli/output.js';

/**
 * A whole-study or manifest download against a fake file service: the API answers through the client's own fetch,
 * the presigned URLs' bytes through the global fetch (as drc's transfers call it). What it skips, what fails and
 * what it says on stderr.
 */
const BASE = 'http://files.test';
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

interface Obj {
  fileId: string;
  versionId: string;
  name: string;
  bytes: Buffer;
  /** What the "S3" URL serves instead of the bytes (a corrupted object). */
  served?: Buffer;
}

const objects: Obj[] = [
  { fileId: 'SF_A', versionId: 'FV_A', name: 'a.txt', bytes: Buffer.from('alpha\n') },
  { fileId: 'SF_B', versionId: 'FV_B', name: 'b.txt', bytes: Buffer.from('bravo bravo\n') },
  { fileId: 'SF_E', versionId: 'FV_E', name: 'empty.txt', bytes: Buffer.alloc(0) },
];
const bad: Obj = {
  fileId: 'SF_C',
  versionId: 'FV_C',
  name: 'c.txt',
  bytes: Buffer.from('charlie\n'),
  served: Buffer.from('CHARLIE\n'),
};
const skipped = {
  file_id: 'SF_P',
  name: 'pending.bin',
  state: 'pending',
  reason: 'its upload is not confirmed',
};

const row = (o: Obj) => ({
  file_id: o.fileId,
  version_id: o.versionId,
  drs_uri: `drs://files.test/${o.versionId}`,
  name: o.name,
  size: o.bytes.length,
  sha256: sha(o.bytes),
  content_type: 'text/plain',
  created_at: '2026-01-01T00:00:00.000Z',
});
const drsObject = (o: Obj) => ({
  id: o.versionId,
  self_uri: `drs://files.test/${o.versionId}`,
  name: o.name,
  size: o.bytes.length,
  created_time: '2026-01-01T00:00:00.000Z',
  checksums: [{ type: 'sha-256', checksum: sha(o.bytes) }],
  aliases: [o.fileId],
  access_methods: [{ type: 'https', access_id: 'https' }],
});

function service(all: Obj[]) {
  const byVersion = new Map(all.map((o) => [o.versionId, o]));
  const s3Gets: string[] = [];
  // openapi-fetch calls its fetch with a Request.
  const api: typeof fetch = async (request) => {
    const input = request as Request;
    const url = new URL(input.url);
    const json = (body: unknown) => Response.json(body);
    if (url.pathname === '/ga4gh/drs/v1/service-info') return json({ maxBulkRequestLength: 2 });
    if (url.pathname.endsWith('/manifest'))
      return json({
        count: all.length,
        next: null,
        previous: null,
        results: all.map(row),
        skipped: [skipped],
      });
    const body = (await input.json()) as any;
    if (url.pathname === '/ga4gh/drs/v1/objects') {
      const ids: string[] = body.bulk_object_ids;
      const known = ids.filter((id) => byVersion.has(id.split('/').pop() ?? ''));
      const unknown = ids.filter((id) => !known.includes(id));
      return json({
        summary: { requested: ids.length, resolved: known.length, unresolved: unknown.length },
        resolved_drs_object: known.map((id) => drsObject(byVersion.get(id.split('/').pop() ?? '') as Obj)),
        unresolved_drs_objects: unknown.length ? [{ error_code: 404, object_ids: unknown }] : [],
      });
    }
    const ids: string[] = body.bulk_object_access_ids.map((a: any) => a.bulk_object_id);
    return json({
      summary: { requested: ids.length, resolved: ids.length, unresolved: 0 },
      resolved_drs_object_access_urls: ids.map((id) => ({
        drs_object_id: id,
        drs_access_id: 'https',
        url: `http://s3.test/${id}`,
        expires_at: new Date(Date.now() + 600_000).toISOString(),
      })),
      unresolved_drs_objects: [],
    });
  };
  vi.stubGlobal('fetch', async (url: string) => {
    s3Gets.push(url);
    const o = byVersion.get(url.split('/').pop() ?? '') as Obj;
    return new Response(o.served ?? o.bytes, { status: 200 });
  });
  return { client: filesClient(BASE, { token: 'sfdt_test' }, { fetch: api }), s3Gets };
}

function output() {
  const err: string[] = [];
  const o: Output = { json: true, bars: false, out: () => {}, err: (t) => err.push(t) };
  return { o, err };
}

afterEach(() => {
  vi.unstubAllGlobals();
});

describe('a whole-study download', () => {
  it('skips files with no available version, naming each with its reason, and is not a failure', async () => {
    const { client } = service(objects);
    const dir = mkdtempSync(join(tmpdir(), 'bulk-'));
    const { o, err } = output();
    const r = await bulkDownload(client, { study: 'SD_X', dir, jobs: 2 }, o);
    expect(r.skipped).toEqual([skipped]);
    expect(err).toEqual(['skipped pending.bin (SF_P): its upload is not confirmed']);
    expect(r.failed).toEqual([]);
    expect(r.downloaded.map((d) => d.name).sort()).toEqual(['a.txt', 'b.txt', 'empty.txt']);
    for (const obj of objects) expect(readFileSync(join(dir, obj.name)).equals(obj.bytes)).toBe(true);
  });

  it('reports a file whose bytes are not its SHA-256 as failed, with a line, and keeps the others', async () => {
    const { client, s3Gets } = service([...objects, bad]);
    const dir = mkdtempSync(join(tmpdir(), 'bulk-'));
    const { o, err } = output();
    const r = await bulkDownload(client, { study: 'SD_X', dir, jobs: 4 }, o);
    expect(r.failed).toEqual([
      expect.objectContaining({ file_id: 'SF_C', version_id: 'FV_C', name: 'c.txt' }),
    ]);
    expect(err.filter((l) => l.startsWith('failed c.txt (SF_C): '))).toHaveLength(1);
    expect(r.downloaded).toHaveLength(3);
    expect(s3Gets.filter((u) => u.endsWith('/FV_C')).length).toBeGreaterThan(1); // tried again
    expect(readdirSync(dir).filter((f) => f.startsWith('c.txt'))).toEqual([]);
  });
});

describe('a manifest download', () => {
  it('takes drs:// URIs, resolves them with the DRS API, and fails the ones it does not know', async () => {
    const { client } = service(objects);
    const dir = mkdtempSync(join(tmpdir(), 'bulk-'));
    const list = join(mkdtempSync(join(tmpdir(), 'list-')), 'uris.txt');
    writeFileSync(
      list,
      [
        '# two objects and one unknown',
        'drs://files.test/FV_A',
        '',
        'drs://files.test/FV_B',
        'drs://files.test/FV_ZZ',
      ]
        .map((l) => `${l}\n`)
        .join(''),
    );
    const { o, err } = output();
    const r = await bulkDownload(client, { manifest: list, dir, jobs: 2 }, o);
    expect(r.downloaded.map((d) => d.name).sort()).toEqual(['a.txt', 'b.txt']);
    expect(r.failed).toEqual([
      {
        file_id: null,
        version_id: null,
        name: 'drs://files.test/FV_ZZ',
        error: 'the DRS API answered 404 for it',
      },
    ]);
    expect(err).toEqual(['failed drs://files.test/FV_ZZ: the DRS API answered 404 for it']);
    expect(r.files).toBe(3);
  });
});

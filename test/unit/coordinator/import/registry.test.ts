import { describe, expect, it } from 'vitest';
import { importStudies, importTaskServices } from '#functions/coordinator/import/registry.js';
import { FakeImportStore } from './fake-store.js';

const service = (extra: Record<string, unknown> = {}) => ({
  kf_id: 'TS_00000001',
  name: 'reports',
  description: 'counts',
  last_ok_status: 4,
  author: 'someone',
  health_status: 'down',
  url: 'https://reports.example.org/',
  created_at: '2018-06-01T10:00:00.5Z',
  enabled: false,
  ...extra,
});

describe('importing task services', () => {
  it('keeps id, author, health and enabled, drops a trailing slash, binds no client', async () => {
    const s = new FakeImportStore();
    const policy = { allowPrivate: false, allowHttp: false, onAws: false };
    expect(await importTaskServices({ imports: s, urlPolicy: policy }, [service()], false)).toEqual([
      { resource: 'task_service', id: 'TS_00000001', outcome: 'written' },
    ]);
    expect(s.written[0].value).toEqual({
      id: 'TS_00000001',
      name: 'reports',
      description: 'counts',
      author: 'someone',
      url: 'https://reports.example.org',
      enabled: false,
      healthStatus: 'down',
      lastOkStatus: 4,
      clientId: null,
      quarantine: null,
      createdAt: '2018-06-01T10:00:00.500000Z',
    });
  });

  it('imports a URL the URL policy refuses as it is, flagged, since every call checks it again', async () => {
    const s = new FakeImportStore();
    const policy = { allowPrivate: false, allowHttp: false, onAws: false };
    const [r] = await importTaskServices(
      { imports: s, urlPolicy: policy },
      [service({ url: 'http://10.1.2.3' })],
      false,
    );
    expect(r).toMatchObject({
      outcome: 'written',
      flags: [expect.stringMatching(/url http:\/\/10\.1\.2\.3 is refused here/)],
    });
  });
});

describe('importing studies', () => {
  it('keeps every field, a missing created_at included, and refuses an unreadable timestamp', async () => {
    const s = new FakeImportStore();
    const study = {
      kf_id: 'SD_00000001',
      name: 'Study',
      version: 'v2',
      visible: false,
      last_pub_version: '0.2.0',
      last_pub_date: '2019-02-03T04:05:06Z',
      deleted: true,
      created_at: null,
    };
    const results = await importStudies(
      { imports: s },
      [study, { ...study, kf_id: 'SD_00000002', last_pub_date: 'soon' }],
      false,
    );
    expect(results.map((r) => r.outcome)).toEqual(['written', 'refused']);
    expect(s.written[0].value).toEqual({
      id: 'SD_00000001',
      name: 'Study',
      version: 'v2',
      visible: false,
      lastPubVersion: '0.2.0',
      lastPubDate: '2019-02-03T04:05:06.000000Z',
      deleted: true,
      createdAt: null,
    });
  });
});

import { describe, expect, it } from 'vitest';
import { expectDrsContract, templateOf } from '#test/helpers/drs-contract.js';

/** The checker the DRS integration tests rely on refuses what the official OpenAPI refuses. */
const json = new Headers({ 'content-type': 'application/json' });
const answer = (status: number, body: unknown) => ({
  status,
  headers: json,
  body,
  text: body === undefined ? '' : JSON.stringify(body),
});
const object = {
  id: 'FV_00000001',
  self_uri: 'drs://drs.example.org/FV_00000001',
  size: 1,
  created_time: '2026-01-01T00:00:00.123456Z',
  checksums: [{ type: 'sha-256', checksum: 'ab' }],
  access_methods: [{ type: 'https', access_id: 'https' }],
};

describe('the DRS contract check', () => {
  it('maps request paths to the spec’s templates, static ones first', () => {
    expect(templateOf('/ga4gh/drs/v1/objects/access')).toBe('/objects/access');
    expect(templateOf('/ga4gh/drs/v1/objects/FV_1?expand=true')).toBe('/objects/{object_id}');
    expect(templateOf('/ga4gh/drs/v1/objects/FV_1/access/https')).toBe(
      '/objects/{object_id}/access/{access_id}',
    );
  });

  it('accepts a valid object and a DRS error', () => {
    expectDrsContract('GET', '/ga4gh/drs/v1/objects/x', answer(200, object));
    expectDrsContract('GET', '/ga4gh/drs/v1/objects/x', answer(404, { msg: 'gone', status_code: 404 }));
  });

  it('refuses a missing required field, a bad format, a wrong enum and a wrong type', () => {
    const { self_uri: _, ...noSelfUri } = object;
    const bad = [
      noSelfUri,
      { ...object, created_time: 'yesterday' },
      { ...object, access_methods: [{ type: 'carrier-pigeon', access_id: 'x' }] },
      { ...object, size: '1' },
      { ...object, checksums: [] },
    ];
    for (const body of bad)
      expect(() => expectDrsContract('GET', '/ga4gh/drs/v1/objects/x', answer(200, body))).toThrow();
    expect(() =>
      expectDrsContract('GET', '/ga4gh/drs/v1/objects/x', answer(404, { msg: 1, status_code: '404' })),
    ).toThrow();
  });

  it('refuses a status code the spec does not declare for the route', () => {
    expect(() => expectDrsContract('GET', '/ga4gh/drs/v1/service-info', answer(404, { msg: 'x' }))).toThrow();
    expect(() => expectDrsContract('GET', '/ga4gh/drs/v1/objects/x', answer(413, { msg: 'x' }))).toThrow();
    expectDrsContract('POST', '/ga4gh/drs/v1/objects', answer(413, { msg: 'x', status_code: 413 }));
  });

  it('requires service-info’s GA4GH fields and the DRS extension', () => {
    const info = {
      id: 'org.example.drs',
      name: 'x',
      type: { group: 'org.ga4gh', artifact: 'drs', version: '1.5.0' },
      organization: { name: 'x', url: 'https://example.org' },
      version: '1',
      maxBulkRequestLength: 1,
    };
    expectDrsContract('GET', '/ga4gh/drs/v1/service-info', answer(200, info));
    const { organization: _, ...noOrganization } = info;
    expect(() =>
      expectDrsContract('GET', '/ga4gh/drs/v1/service-info', answer(200, noOrganization)),
    ).toThrow();
    expect(() =>
      expectDrsContract(
        'GET',
        '/ga4gh/drs/v1/service-info',
        answer(200, { ...info, type: { ...info.type, artifact: 'wes' } }),
      ),
    ).toThrow();
  });
});

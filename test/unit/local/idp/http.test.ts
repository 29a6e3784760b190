import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { basicCredentials, decodeBody, redirectWith } from '#local/idp/http.js';

const req = (contentType?: string) =>
  ({ headers: contentType ? { 'content-type': contentType } : {} }) as IncomingMessage;
const basic = (raw: string) => `Basic ${Buffer.from(raw).toString('base64')}`;

describe('the local identity provider reads requests as OAuth 2.0 says', () => {
  it('decodes HTTP Basic credentials as form-urlencoded id and secret (RFC 6749 §2.3.1)', () => {
    expect(basicCredentials(basic('my+client:s%3Acret'))).toEqual({ id: 'my client', secret: 's:cret' });
    expect(basicCredentials(undefined)).toBeNull();
    expect(basicCredentials('Bearer x')).toBeNull();
    expect(() => basicCredentials(basic('no-colon'))).toThrow(/Malformed HTTP Basic/);
  });

  it('reads a form or JSON where forms are allowed, JSON whatever the type elsewhere, and refuses other types', () => {
    const form = Buffer.from('grant_type=client_credentials&client_id=a');
    expect(decodeBody(req('application/x-www-form-urlencoded'), form, true)).toEqual({
      grant_type: 'client_credentials',
      client_id: 'a',
    });
    expect(decodeBody(req('text/plain'), Buffer.from('{"a":1}'), false)).toEqual({ a: 1 });
    expect(decodeBody(req(), Buffer.from(''), false)).toBeUndefined();
    expect(() => decodeBody(req('text/plain'), Buffer.from('{}'), true)).toThrow(
      expect.objectContaining({ status: 415 }),
    );
    expect(() => decodeBody(req(), Buffer.from('{'), false)).toThrow(/not valid JSON/);
  });

  it('redirects back with the parameters given, leaving out those without a value', () => {
    const out = redirectWith('http://127.0.0.1:3005/cb?x=1', { code: 'c', state: undefined });
    expect(out).toEqual({ status: 302, headers: { Location: 'http://127.0.0.1:3005/cb?x=1&code=c' } });
  });
});

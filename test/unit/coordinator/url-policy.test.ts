import { describe, expect, it } from 'vitest';
import { checkServiceUrl } from '#functions/coordinator/url-policy.js';

const OPEN = { allowPrivate: true, allowHttp: true };
const normalizeServiceUrl = (url: string) => checkServiceUrl(url, OPEN);

describe('task service urls', () => {
  it('strips trailing slashes and keeps paths', () => {
    expect(normalizeServiceUrl(' https://svc.example/base/// ')).toBe('https://svc.example/base');
    expect(normalizeServiceUrl('http://127.0.0.1:8080')).toBe('http://127.0.0.1:8080');
  });
  it.each(['ftp://x', 'mailto:a@b', '//x', 'x', 'http://a/?q=1'])('refuses %s under url', (url) => {
    expect(() => normalizeServiceUrl(url)).toThrow(
      expect.objectContaining({ fields: { url: expect.any(Array) } }),
    );
  });
});

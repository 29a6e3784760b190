import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';

/**
 * What an API serves about itself, without a token: GET /openapi.json (the committed document, naming the URL it was
 * fetched from as its server), GET /docs (a Redoc page loading nothing from elsewhere) and its script.
 */
export function itDescribesItself(name: 'coordinator' | 'files', baseUrl: () => string): void {
  const committed = () =>
    JSON.parse(readFileSync(new URL(`../../openapi/${name}.json`, import.meta.url), 'utf8'));

  it('serves its OpenAPI document without a token, naming the URL it was fetched from as its server', async () => {
    const res = await fetch(`${baseUrl()}/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({ ...committed(), servers: [{ url: baseUrl() }] });
    // A conditional read like any other GET.
    const again = await fetch(`${baseUrl()}/openapi.json`, {
      headers: { 'If-None-Match': res.headers.get('etag')! },
    });
    expect(again.status).toBe(304);
  });

  it('serves a reference page whose every asset comes from the API itself', async () => {
    const page = await fetch(`${baseUrl()}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toMatch(/default-src 'none'; script-src 'self'/);
    const html = await page.text();
    expect(html).toContain(`<redoc spec-url="${baseUrl()}/openapi.json"></redoc>`);
    const urls = [...html.matchAll(/(?:src|href|spec-url)="([^"]+)"/g)].map((m) => m[1]);
    expect(urls.length).toBeGreaterThan(1);
    for (const url of urls) expect(url.startsWith(`${baseUrl()}/`), url).toBe(true);

    const script = await fetch(`${baseUrl()}/docs/redoc.standalone.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    const js = await script.text();
    expect(js.length).toBeGreaterThan(500_000);
    expect(js).toContain('Redoc');
  });

  it('answers 404 for any other asset, inherited property names included', async () => {
    for (const asset of ['other.js', 'toString', '__proto__'])
      expect((await fetch(`${baseUrl()}/docs/${asset}`)).status, asset).toBe(404);
  });
}

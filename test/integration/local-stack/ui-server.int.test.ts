import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureUiBuilt, UI_DIST, uiSourceHash } from '#local/ui-build.js';
import { createUiServer, type DashboardConfig } from '#local/ui-server.js';

/** The dashboard's local server over real HTTP, on a small stand-in build, and the build-when-stale step. */
const dist = mkdtempSync(join(tmpdir(), 'ui-dist-'));
let config: DashboardConfig | null = null;
let server: Server;
let base = '';

beforeAll(async () => {
  mkdirSync(join(dist, 'assets'));
  mkdirSync(join(dist, 'assets.d'));
  writeFileSync(join(dist, 'index.html'), '<!doctype html><div id="app"></div>');
  writeFileSync(join(dist, 'assets', 'index-abc123.js'), 'console.log(1)');
  writeFileSync(join(dist, 'favicon.svg'), '<svg/>');
  server = createUiServer({
    dist: Promise.resolve(dist),
    config: () => config,
    connect: () => ['http://127.0.0.1:9003'],
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  rmSync(dist, { recursive: true, force: true });
});

describe('the dashboard server', () => {
  it('answers /config.json 503 while the stack starts, then the runtime config, never cached', async () => {
    const starting = await fetch(`${base}/config.json`);
    expect(starting.status).toBe(503);
    config = {
      coordinatorUrl: 'http://127.0.0.1:9000',
      filesUrl: 'http://127.0.0.1:9001',
      authority: 'http://127.0.0.1:9002',
      clientId: 'dashboard',
      scope: 'openid',
      logoutUrl: null,
      pollMs: 1000,
      taskServices: { clientRequired: false, createClient: true },
    };
    const ready = await fetch(`${base}/config.json`);
    expect(ready.status).toBe(200);
    expect(ready.headers.get('cache-control')).toBe('no-store');
    expect(await ready.json()).toEqual(config);
  });

  it('serves index.html for app routes and caches only hashed assets', async () => {
    for (const path of ['/', '/releases/RE_AAAAAAAA', '/studies/SD_AAAAAAAA/files']) {
      const res = await fetch(`${base}${path}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(res.headers.get('cache-control')).toBe('no-cache');
      expect(await res.text()).toContain('id="app"');
    }
    const asset = await fetch(`${base}/assets/index-abc123.js`);
    expect(asset.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect((await fetch(`${base}/favicon.svg`)).headers.get('cache-control')).toBe('no-cache');
  });

  it('answers 404 for a missing file and for paths that climb out of the build', async () => {
    expect((await fetch(`${base}/assets/missing.js`)).status).toBe(404);
    expect((await fetch(`${base}/%2e%2e/%2e%2e/etc/passwd.txt`)).status).toBe(404);
    // A directory is not a file the app has.
    expect((await fetch(`${base}/assets.d`)).status).toBe(404);
    const post = await fetch(`${base}/`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
  });

  it('sends a CSP that allows scripts from itself only and calls to the stack it was configured with', async () => {
    const res = await fetch(`${base}/`);
    const csp = res.headers.get('content-security-policy') as string;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain(
      "connect-src 'self' http://127.0.0.1:9000 http://127.0.0.1:9001 http://127.0.0.1:9002 http://127.0.0.1:9003",
    );
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });
});

describe('building the dashboard for npm start', () => {
  it('builds ui/dist when its sources changed, and skips the build when they did not', async () => {
    await ensureUiBuilt();
    expect(readFileSync(join(UI_DIST, '.source-hash'), 'utf8').trim()).toBe(uiSourceHash());
    const again = await ensureUiBuilt();
    expect(again.built).toBe(false);
    expect(readFileSync(join(UI_DIST, 'index.html'), 'utf8')).toMatch(
      /<script type="module"[^>]+src="\/assets\//,
    );
  }, 120_000);
});

import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { extname, join, normalize, sep } from 'node:path';
import type { DashboardConfig } from '../ui/src/config.js';

/**
 * Serves the built dashboard (ui/dist) for `npm start`, the way CloudFront serves it on AWS: hashed assets cached
 * for a year, index.html and /config.json never cached, any path without a file extension answered with
 * index.html (the app routes in the browser), and the same security headers.
 *
 * /config.json is the runtime configuration (API URLs, issuer, client id), written here from the stack's own
 * ports, so one build works against any stack. Its shape is the app's own (ui/src/config.ts).
 */
export type { DashboardConfig };

/** The public client id of the dashboard at the local identity provider. */
export const DASHBOARD_CLIENT_ID = 'dashboard';

export interface UiServerOptions {
  /** Resolves to the directory of the built app once it is ready. */
  dist: Promise<string>;
  /** The runtime config, or null while the stack is still starting (then /config.json answers 503). */
  config: () => DashboardConfig | null;
  /** Further origins the app may call: the S3 endpoint that uploads PUT to (not part of config.json). */
  connect?: () => string[];
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
};

/** The Content-Security-Policy of the app: its own scripts and styles only; it may call the stack's endpoints. */
export function contentSecurityPolicy(connect: string[]): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src 'self' ${connect.join(' ')}`.trim(),
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

const origin = (url: string) => new URL(url).origin;

export function createUiServer(options: UiServerOptions): Server {
  return createServer(async (req, res) => {
    const send = (status: number, body: Buffer | string, headers: Record<string, string>) => {
      const config = options.config();
      const connect = config
        ? [config.coordinatorUrl, config.filesUrl, config.authority, ...(options.connect?.() ?? [])].map(
            origin,
          )
        : [];
      res.writeHead(status, {
        'Content-Length': Buffer.byteLength(body),
        'X-Content-Type-Options': 'nosniff',
        'Referrer-Policy': 'no-referrer',
        'X-Frame-Options': 'DENY',
        'Content-Security-Policy': contentSecurityPolicy([...new Set(connect)]),
        ...headers,
      });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      send(405, 'Method not allowed\n', { Allow: 'GET, HEAD', 'Content-Type': 'text/plain; charset=utf-8' });
      return;
    }
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://local').pathname);
    if (path === '/config.json') {
      const config = options.config();
      if (!config) {
        send(503, '{"error":{"code":"not_ready","message":"The local stack is starting"}}', {
          'Content-Type': 'application/json',
          'Cache-Control': 'no-store',
        });
        return;
      }
      send(200, JSON.stringify(config), { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
      return;
    }
    let dist: string;
    try {
      dist = await options.dist;
    } catch (err) {
      send(503, `The dashboard could not be built: ${err instanceof Error ? err.message : String(err)}\n`, {
        'Content-Type': 'text/plain; charset=utf-8',
      });
      return;
    }
    // A path with an extension is a file (404 if missing); anything else is a route of the app.
    const isFile = extname(path) !== '';
    const file = isFile ? normalize(join(dist, path)) : join(dist, 'index.html');
    if (!file.startsWith(`${dist}${sep}`)) {
      send(404, 'Not found\n', { 'Content-Type': 'text/plain; charset=utf-8' });
      return;
    }
    const body = await readRetrying(file);
    if (!body) {
      send(404, 'Not found\n', { 'Content-Type': 'text/plain; charset=utf-8' });
      return;
    }
    const hashed = path.startsWith('/assets/');
    send(200, body, {
      'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream',
      'Cache-Control': hashed ? 'public, max-age=31536000, immutable' : 'no-cache',
    });
  });
}

/** A concurrent rebuild swaps ui/dist with a rename; a read that falls between the two renames tries again. */
async function readRetrying(file: string): Promise<Buffer | null> {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await readFile(file);
    } catch (err) {
      // EISDIR and the like: not a file the app has.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return null;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return null;
}

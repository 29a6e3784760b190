import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

/**
 * The dashboard: a static single-page app. `vite build` writes ui/dist (local/ui-server.ts serves it for
 * `npm start`; the CDK app deploys it). Nothing environment-specific is compiled in: API URLs, the issuer and the
 * client id come from /config.json at run time.
 */
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  // Preact's automatic JSX runtime, without a plugin.
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    sourcemap: true,
    reportCompressedSize: false,
  },
  logLevel: 'warn',
});

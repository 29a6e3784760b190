#!/usr/bin/env node
// The `drc` bin of package.json: registers tsx (a devDependency, there after `npm ci`) and runs the TypeScript
// entry bin/cli.ts, so no build step stands between a fresh clone and `npx drc`.
//
// It runs on the project's own Node 22 (the `node` devDependency): npx puts node_modules/.bin first on PATH, so the
// `node` of the line above is that one. package.json's `engines` says >=20, the Node that runs npm and npx itself
// (README, Quickstart), so the requirement of the code is checked here, where the code runs.
const major = Number(process.versions.node.split('.')[0]);
if (major < 22) {
  process.stderr.write(
    `drc: needs Node 22 or later, the project's own (npm ci installs it); this is Node ${process.versions.node}. ` +
      'Run it as `npx drc` from the repository.\n',
  );
  process.exit(1);
}
const { register } = await import('tsx/esm/api');
register();
await import('./cli.ts');

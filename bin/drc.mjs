#!/usr/bin/env node
// The `drc` bin of package.json: registers tsx (a devDependency, there after `npm ci`) and runs the TypeScript
// entry bin/cli.ts, so no build step stands between a fresh clone and `npx drc`.
import { register } from 'tsx/esm/api';

register();
await import('./cli.ts');

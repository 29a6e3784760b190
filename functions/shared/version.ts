import pkg from '../../package.json' with { type: 'json' };

/**
 * The release of this code: package.json's `version` (semver; CHANGELOG.md says what each one changed). `GET /health`
 * and `drc --version` report it, and every release execution carries the version that started it
 * (functions/orchestration/config.ts), so a step can tell an execution started by an earlier release.
 */
export const APP_VERSION: string = pkg.version;

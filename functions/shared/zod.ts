import { config } from 'zod/mini';
import en from 'zod/v4/locales/en.js';

/**
 * zod for the functions: the tree-shakable `zod/mini` API (`z.optional(z.string())`, `.check(z.minLength(1))`),
 * because the classic chaining API costs about 60 KB more in every bundle (lib/bundling.ts, npm run bench:cold).
 * The schemas and their error messages are the same: this module also sets the English messages, which the
 * classic API sets up by itself. Everything under functions/ imports zod from here (Biome enforces it).
 */
config(en());

export * from 'zod/mini';

// Bundled in place of node:path (lib/bundling.ts, NODE_BUILTINS_VIA_REQUIRE): the same CommonJS module,
// without the ES module facade Node builds for an import of it, which reads every export at a cold start.
module.exports = process.getBuiltinModule('node:path');

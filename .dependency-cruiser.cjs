/**
 * The import rules of the project, checked by dependency-cruiser in `npm test` (`npm run lint:deps`,
 * bin/lint-deps.ts). docs/architecture.md explains the layers:
 *
 *   handler (functions/<area>/handlers/)  ->  use case (functions/<area>/*)  ->  port  <-  adapter (functions/adapters/)
 *
 * An area's vocabulary is what both sides of a port speak: its ports, its model (types and zod schemas), its config
 * and the pure rules that adapters apply too (version order, JSON views, the URL policy, token formats). Use cases
 * and adapters both import it; it imports neither. A module joins the list only if it is pure: no port is called,
 * nothing is wired.
 */
const AREA = '(coordinator|orchestration|files)';
const HANDLERS = `^functions/${AREA}/handlers/`;
const VOCABULARY = [
  '^functions/coordinator/(ports|model|versions|views|url-policy|service-credentials|service-client-gate-contract)[.]ts$',
  '^functions/coordinator/import/ports[.]ts$',
  '^functions/orchestration/(ports|config)[.]ts$',
  '^functions/files/(ports|model|config|views|tokens|drs-config|drs-model)[.]ts$',
];

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment:
        'No import circles anywhere: a circle makes module load order matter and lets two modules drift into one.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'use-cases-import-no-adapter',
      severity: 'error',
      comment:
        'A use case imports ports and shared code, never an adapter: the handler wires the adapter and hands it over, ' +
        'so each bundle carries only the adapters its own handler builds.',
      from: { path: `^functions/${AREA}/`, pathNot: HANDLERS },
      to: { path: '^functions/adapters/' },
    },
    {
      name: 'adapters-import-no-use-case',
      severity: 'error',
      comment:
        "An adapter implements ports: it may use an area's vocabulary (ports, model, config, pure rules), never a " +
        'use case or a handler. Logic an adapter needs from a use case belongs in the use case, built on ports.',
      from: { path: '^functions/adapters/' },
      to: { path: `^functions/${AREA}/`, pathNot: VOCABULARY },
    },
    {
      name: 'vocabulary-imports-no-use-case',
      severity: 'error',
      comment:
        'Ports, models and pure rules are what use cases and adapters share, so they import neither (only shared ' +
        'code and other vocabulary).',
      from: { path: VOCABULARY },
      to: { path: `^functions/(adapters|${AREA})/`, pathNot: VOCABULARY },
    },
    {
      name: 'shared-imports-no-area',
      severity: 'error',
      comment: 'functions/shared/ serves every area and adapter, so it imports none of them.',
      from: { path: '^functions/shared/' },
      to: { path: `^functions/(adapters|${AREA})/` },
    },
    {
      name: 'nothing-imports-a-handler',
      severity: 'error',
      comment:
        'Each handler is the entry point of a bundle of its own: no module under functions/ imports one.',
      from: { path: '^functions/' },
      to: { path: HANDLERS },
    },
    {
      name: 'functions-import-only-functions',
      severity: 'error',
      comment:
        'Runtime code is bundled and deployed alone: it imports no CDK (lib/), local stack, test, benchmark, cost model, operator command or CLI code.',
      from: { path: '^functions/' },
      to: { path: '^(lib|local|test|bench|cost|ops|cli|clients|bin|ui|examples)/' },
    },
    {
      name: 'functions-take-only-schema-free-kit-modules',
      severity: 'error',
      comment:
        "Runtime code shares the task-service kit's protocol (states, actions, transitions) and its token cache, " +
        'modules without zod schemas: the schemas of the wire format would add their code to every bundle that ' +
        'imports them and build them at each cold start.',
      from: { path: '^functions/' },
      to: { path: '^packages/', pathNot: '^packages/task-service/src/(protocol|token)[.]ts$' },
    },
    {
      name: 'packages-import-only-themselves',
      severity: 'error',
      comment:
        'A package under packages/ is published on its own: it imports its own files and its dependencies, nothing ' +
        'else of the repository (the coordinator, the CLI and the examples import it, never the other way).',
      from: { path: '^packages/([^/]+)/' },
      to: { path: '^(functions|lib|local|test|bench|cost|ops|cli|clients|bin|ui|examples)/' },
    },
    {
      name: 'clients-run-in-node-and-browsers',
      severity: 'error',
      comment:
        'clients/ is the code drc and the dashboard share, and the dashboard bundles it for browsers: it imports no ' +
        'Node built-in, and of the repository only itself and the generated API types (each side brings its I/O).',
      from: { path: '^clients/' },
      to: {
        dependencyTypes: ['core'],
      },
    },
    {
      name: 'clients-import-only-api-types',
      severity: 'error',
      comment: 'See clients-run-in-node-and-browsers: the sides import clients/, never the other way.',
      from: { path: '^clients/' },
      to: { path: '^(functions|lib|local|test|bench|cost|ops|cli|bin|ui|examples|packages)/' },
    },
    {
      name: 'one-composition-root-per-handler',
      severity: 'error',
      comment:
        'There is no per-area composition root (deps.ts, index.ts): each handler wires what its routes use.',
      from: { path: `^functions/${AREA}/(deps|index)[.]ts$` },
      to: {},
    },
  ],
  options: {
    // Type-only imports count: a port is mostly imported as a type, and a rule that missed them would miss it.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    // test/fixtures/layering breaks every rule on purpose (test/unit/bin/lint-deps.test.ts cruises it alone).
    exclude: {
      path: [
        '(^|/)node_modules/',
        '^openapi/types/',
        '^cdk[.]out/',
        '(^|/)dist/',
        '^test/fixtures/layering/',
      ],
    },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.tsx', '.mts', '.js', '.mjs', '.cjs', '.json'],
    },
    skipAnalysisNotInRules: true,
  },
};

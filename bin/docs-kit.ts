/**
 * `npm run docs:kit`: the task-service kit's API reference, built by typedoc from its public entry points
 * (packages/task-service/src/index.ts, and src/cdk.ts: `@release-coordinator/task-service/cdk`) into dist/kit-docs/
 * (git-ignored). Every export carries TSDoc with an
 * `@example`; typedoc's warnings (an undocumented export, a referenced type that is not exported, a broken link)
 * and a missing `@example` fail the run, and test/unit/bin/docs-kit.test.ts runs it inside `npm test`.
 *
 *   tsx bin/docs-kit.ts [--entry <file>]... [--tsconfig <file>] [--out <dir>]
 *
 * typedoc reads TypeScript with the TypeScript compiler's JavaScript API, which TypeScript 7 (this project's
 * compiler, a native binary) no longer has: its imports of `typescript` are answered with the `typescript5` package
 * (an alias of typescript@5, a devDependency), as bin/lint-deps.ts does for dependency-cruiser. For the install
 * alone, package.json's `overrides` let typedoc's peer dependency on typescript 5 take the project's typescript.
 */
import { registerHooks } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

registerHooks({
  resolve(specifier, context, next) {
    const fromTypedoc = context.parentURL?.includes('/node_modules/typedoc/');
    const typescript = specifier === 'typescript' || specifier.startsWith('typescript/');
    return next(
      fromTypedoc && typescript ? specifier.replace(/^typescript/, 'typescript5') : specifier,
      context,
    );
  },
});

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const KIT = join(ROOT, 'packages/task-service');

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? resolve(args[at + 1]) : fallback;
};
const entries = args.flatMap((a, i) => (a === '--entry' ? [resolve(args[i + 1])] : []));
const entryPoints = entries.length ? entries : [join(KIT, 'src/index.ts'), join(KIT, 'src/cdk.ts')];
const tsconfig = option('tsconfig', join(KIT, 'tsconfig.build.json'));
const out = option('out', join(ROOT, 'dist/kit-docs'));

const td = await import('typedoc');
const started = performance.now();
const app = await td.Application.bootstrapWithPlugins(
  {
    name: '@release-coordinator/task-service',
    entryPoints,
    tsconfig,
    out,
    readme: join(KIT, 'README.md'),
    // `npm run typecheck` checks the types (with TypeScript 7); typedoc only reads them.
    skipErrorChecking: true,
    disableSources: true,
    excludePrivate: true,
    excludeInternal: true,
    // The exports themselves; the members of an exported interface or class are documented where they need it.
    requiredToBeDocumented: ['Variable', 'Function', 'Class', 'Interface', 'TypeAlias', 'Enum'],
    validation: { notExported: true, notDocumented: true, invalidLink: true, invalidPath: true },
    treatWarningsAsErrors: true,
    logLevel: 'Warn',
  },
  [new td.TSConfigReader()],
);

const project = await app.convert();
if (project) {
  for (const missing of withoutExample(project)) app.logger.error(`${missing} has no @example in its TSDoc`);
  app.validate(project);
  if (!app.logger.hasErrors()) await app.generateDocs(project, out);
}
const seconds = ((performance.now() - started) / 1000).toFixed(1);
if (!project || app.logger.hasErrors() || app.logger.hasWarnings()) {
  process.stderr.write(`The kit's reference has errors (${seconds} s); nothing was written.\n`);
  process.exitCode = 1;
} else process.stdout.write(`The kit's reference is in ${relative(ROOT, out)}/ (${seconds} s).\n`);

/**
 * The exports of the entry points whose TSDoc has no `@example` (a function's is on its signature). With several
 * entry points, each is a module of the project, and its exports are the module's children.
 */
function withoutExample(project: InstanceType<typeof td.ProjectReflection>): string[] {
  const exported = (project.children ?? []).flatMap((child) =>
    child.kindOf(td.ReflectionKind.Module) ? (child.children ?? []) : [child],
  );
  return exported
    .filter((child) => {
      const comments = [child.comment, ...(child.signatures ?? []).map((s) => s.comment)];
      return !comments.some((c) => c?.blockTags.some((tag) => tag.tag === '@example'));
    })
    .map((child) => `${td.ReflectionKind.singularString(child.kind)} ${child.name}`);
}

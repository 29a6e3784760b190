import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { maxDirectivesRule } from '@escape.tech/graphql-armor-max-directives';
import {
  type DocumentNode,
  GraphQLError,
  type GraphQLSchema,
  Kind,
  type SelectionSetNode,
  specifiedRules,
  type ValidationContext,
  type ValidationRule,
  validate,
} from 'graphql';
import { type ComplexityEstimator, createComplexityRule } from 'graphql-query-complexity';

/**
 * What one GraphQL document may ask for, checked before anything runs (docs/security.md, "GraphQL"). The rules are
 * graphql-js validation rules: aliases, depth and directives from graphql-armor (each counts through fragments once
 * per spread, caching what a fragment contains, so counting is linear in the document), the cost from
 * graphql-query-complexity with an estimator of our own, and the cap on mutations, which no package offers.
 *
 * The cost is an upper bound on the repository calls the document can make: every field that reads (a list, a
 * lookup, latestVersion) costs its own reads, and a list field adds `first` times the cost of what it selects for
 * each item. graphql-armor's own cost rule has no such multiplier (it weighs objects and scalars by depth), which is
 * why graphql-query-complexity computes it. The property test (test/unit/files/graphql-limits.test.ts) holds the
 * resolvers to the bound.
 */
export const GRAPHQL_LIMITS = {
  /** Lexical tokens of the query text (graphql-js's own parse option). */
  tokens: 5000,
  /** Aliases per operation, counted through fragments. */
  aliases: 20,
  /** Field nesting (fragments flattened). The schema's deepest path is 7: allFiles.edges.node.versions.edges.node.id. */
  depth: 8,
  /** Directives (@include, @skip) per operation. */
  directives: 10,
  /** Fields the complexity walk may visit, fragments expanded: no document makes the walk itself expensive. */
  nodes: 1000,
  /** Repository calls one operation may cost (see the weights below). */
  cost: 250,
  /** Mutation fields per operation (each mints, creates or deletes). */
  mutations: 5,
} as const;

export type GraphqlLimit = keyof typeof GRAPHQL_LIMITS;

/**
 * The repository calls each field makes before its children run: a study's files are the study check and the page
 * (count and items), a file's versions the file and the page, a signed URL the version and the token.
 */
export const FIELD_COST: Readonly<Record<string, number>> = {
  'Query.allFiles': 2,
  'Query.allVersions': 2,
  'Query.file': 1,
  'Query.version': 1,
  'Query.allDevTokens': 1,
  'File.latestVersion': 1,
  // One read for its newest available version, one more when it has none.
  'File.state': 2,
  'File.versions': 1,
  'Mutation.signedUrl': 2,
  'Mutation.createDevToken': 1,
  'Mutation.deleteDevToken': 1,
};

/** The default page size of every list field (the schema's `first: Int = 10`). */
const DEFAULT_FIRST = 10;

/**
 * How many items a list field can return. A `first` outside 1..100 makes the resolver refuse before it reads
 * anything, so its children never run: they cost nothing.
 */
function pageSize(first: unknown): number {
  if (first === undefined || first === null) return DEFAULT_FIRST;
  return typeof first === 'number' && Number.isInteger(first) && first >= 1 && first <= 100 ? first : 0;
}

const estimator: ComplexityEstimator = ({ type, field, args, childComplexity }) => {
  const own = FIELD_COST[`${type.name}.${field.name}`] ?? 0;
  const isList = field.args.some((a) => a.name === 'first');
  return own + (isList ? pageSize(args.first) : 1) * childComplexity;
};

/** A refusal: a 400 whose GraphQL error names the limit (`extensions.limit`), its maximum and what was found. */
export function limitError(limit: GraphqlLimit, found: number | null, message: string): GraphQLError {
  return new GraphQLError(message, {
    extensions: {
      code: 'GRAPHQL_VALIDATION_FAILED',
      status: 400,
      limit,
      maximum: GRAPHQL_LIMITS[limit],
      ...(found === null ? {} : { found }),
    },
  });
}

/** graphql-armor reports through `onReject`; its message carries the count ("…, found 56140."). */
function armored(limit: GraphqlLimit, what: string) {
  return {
    n: GRAPHQL_LIMITS[limit],
    propagateOnRejection: false,
    onReject: [
      (context: ValidationContext | null, err: GraphQLError) => {
        const found = Number(/found (\d+)/.exec(err.message)?.[1] ?? Number.NaN);
        context?.reportError(
          limitError(
            limit,
            Number.isNaN(found) ? null : found,
            `The document has ${Number.isNaN(found) ? 'too many' : found} ${what}; at most ${GRAPHQL_LIMITS[limit]} ` +
              `are allowed (limit: ${limit})`,
          ),
        );
      },
    ],
  };
}

/** Root fields of a mutation, through fragments (each fragment counted once per spread, its count cached). */
function rootFields(set: SelectionSetNode, context: ValidationContext, seen: Map<string, number>): number {
  let n = 0;
  for (const s of set.selections) {
    if (s.kind === Kind.FIELD) n++;
    else if (s.kind === Kind.INLINE_FRAGMENT) n += rootFields(s.selectionSet, context, seen);
    else {
      const name = s.name.value;
      if (!seen.has(name)) {
        seen.set(name, 0); // a cycle counts nothing (graphql-js refuses cycles anyway)
        const fragment = context.getFragment(name);
        seen.set(name, fragment ? rootFields(fragment.selectionSet, context, seen) : 0);
      }
      n += seen.get(name) ?? 0;
    }
  }
  return n;
}

const maxMutationsRule: ValidationRule = (context) => ({
  OperationDefinition(op) {
    if (op.operation !== 'mutation') return;
    const found = rootFields(op.selectionSet, context, new Map());
    if (found > GRAPHQL_LIMITS.mutations)
      context.reportError(
        limitError(
          'mutations',
          found,
          `The document has ${found} mutations; at most ${GRAPHQL_LIMITS.mutations} are allowed per request ` +
            '(limit: mutations)',
        ),
      );
  },
});

/**
 * Checks the limits, then the GraphQL specification's own rules. The limits run first and alone: each is linear in
 * the document (the complexity walk stops at GRAPHQL_LIMITS.nodes), so a document that breaks one is refused before
 * the specification's rules, some of which grow faster than the document (overlapping fields are compared in pairs).
 * `onCost` receives the computed cost of a document within the limits.
 */
export function validateWithLimits(
  schema: GraphQLSchema,
  document: DocumentNode,
  variables: Record<string, unknown> | undefined,
  operationName: string | undefined,
  onCost: (cost: number) => void = () => {},
): readonly GraphQLError[] {
  // graphql-query-complexity reads `operation.name.value` when given a name; with no operation of that name, every
  // operation is costed (execution will refuse the name anyway).
  const named = document.definitions.some(
    (d) => d.kind === Kind.OPERATION_DEFINITION && d.name?.value === operationName,
  );
  const cost = createComplexityRule({
    maximumComplexity: GRAPHQL_LIMITS.cost,
    estimators: [estimator],
    variables,
    operationName: named ? operationName : undefined,
    maxQueryNodes: GRAPHQL_LIMITS.nodes,
    onComplete: onCost,
    createError: (max, actual) =>
      limitError(
        'cost',
        actual,
        `The document costs ${actual}; at most ${max} are allowed (limit: cost). A list field costs its own reads ` +
          'plus `first` times what it selects: ask for fewer items or fewer nested lists',
      ),
  });
  const shape: ValidationRule[] = [
    maxAliasesRule(armored('aliases', 'aliases')),
    maxDepthRule({
      ...armored('depth', 'levels of nesting'),
      flattenFragments: true,
      ignoreIntrospection: true,
    }),
    maxDirectivesRule(armored('directives', 'directives')),
    maxMutationsRule,
  ];
  let refused = validate(schema, document, shape);
  if (refused.length) return refused;
  try {
    refused = validate(schema, document, [cost]);
  } catch (err) {
    // graphql-query-complexity throws (rather than reports) when its walk passes maxQueryNodes.
    if (err instanceof Error && /maximum allowed number of nodes/.test(err.message))
      return [
        limitError(
          'nodes',
          null,
          `The document selects more than ${GRAPHQL_LIMITS.nodes} fields once its fragments are expanded ` +
            '(limit: nodes)',
        ),
      ];
    throw err;
  }
  if (refused.length) return refused;
  return validate(schema, document, specifiedRules);
}

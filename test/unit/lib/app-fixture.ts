import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, type CfnElement, Stack, type StackProps } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { afterAll } from 'vitest';
import { buildApp, type ReleaseCoordinatorApp } from '#lib/app.js';
import { TABLES, type TableKey } from '#lib/table-definitions.js';

/**
 * What the CDK assertion files on the whole app (test/unit/lib/app.*.test.ts) share: the app synthesized as `cdk
 * synth` would (cdk-nag included) but without esbuild bundling, which one dedicated test covers, and the helpers that
 * read its templates.
 *
 * Every assertion runs twice (ENVS): on an env-agnostic app (no account or region, as `app.synth()` in a test gives
 * it) and on one with a concrete account and region, as the CDK CLI synthesizes it for an operator
 * (CDK_DEFAULT_ACCOUNT and CDK_DEFAULT_REGION); the CLI itself is run by test/unit/bin/app.test.ts. A whole-app synth
 * takes seconds, so each file synthesizes the default app once per env and every other setting once per env,
 * however many of its tests read it (`synth` remembers them).
 */
export const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] };

/**
 * The decisions an operator must give for a synth with an account (lib/deploy-checks.ts): every synth here gets them,
 * as a deployment's would, unless a test overrides them.
 */
export const OPERATOR_DECISIONS = {
  alarmEmail: 'oncall@example.org',
  studiesSource: 'https://dataservice.example.org',
};

/** An existing VPC as an operator gives it (the `vpc` setting, lib/network.ts). */
export const EXAMPLE_VPC = {
  vpcId: 'vpc-0a1b2c3d4e5f60718',
  privateSubnetIds: ['subnet-0aaaaaaaaaaaaaaa1', 'subnet-0bbbbbbbbbbbbbbb2'],
  availabilityZones: ['eu-west-1a', 'eu-west-1b'],
  privateSubnetRouteTableIds: ['rtb-0ccccccccccccccc3', 'rtb-0ddddddddddddddd4'],
};

/** Custom domains for both APIs and the dashboard, each with its ACM certificate (the dashboard's in us-east-1). */
export const CUSTOM_DOMAINS = {
  coordinatorDomainName: 'coordinator.example.org',
  coordinatorCertificateArn:
    'arn:aws:acm:us-east-1:123456789012:certificate/11111111-2222-3333-4444-555555555555',
  filesDomainName: 'files.example.org',
  filesCertificateArn: 'arn:aws:acm:us-east-1:123456789012:certificate/66666666-7777-8888-9999-000000000000',
  dashboardDomainName: 'releases.example.org',
  dashboardCertificateArn:
    'arn:aws:acm:us-east-1:123456789012:certificate/aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee',
};

export const ENVS = [
  ['env-agnostic', undefined],
  ['account 123456789012 in eu-west-1', { account: '123456789012', region: 'eu-west-1' }],
] as const;

export interface Synth {
  built: ReleaseCoordinatorApp;
  stateful: Template;
  auth?: Template;
  coordinator: Template;
  files: Template;
  dashboard?: Template;
  observability: Template;
}

/** Every synth writes its cloud assembly under one temporary directory, removed after the file. */
const outRoot = mkdtempSync(join(tmpdir(), 'cdk-test-'));
afterAll(() => rmSync(outRoot, { recursive: true, force: true }));

/** A fresh CDK app whose assembly goes under the file's temporary directory. */
export const newApp = (context: Record<string, unknown> = {}) =>
  new App({ outdir: mkdtempSync(join(outRoot, 'out-')), context });

/** A fresh directory under the file's temporary one (for bundles built by hand). */
export const tempDir = (prefix: string) => mkdtempSync(join(outRoot, prefix));

const synthesized = new Map<string, Synth>();

/** The whole app in `env` with `context` on top of the defaults: synthesized on first use, then remembered. */
export function synth(env: StackProps['env'], context: Record<string, unknown> = {}): Synth {
  const key = JSON.stringify([env ?? null, context]);
  const known = synthesized.get(key);
  if (known) return known;
  const app = newApp({ ...NO_BUNDLING, ...OPERATOR_DECISIONS, ...context });
  const built = buildApp(app, { env });
  const assembly = app.synth();
  const t = (stack: Stack) => Template.fromJSON(assembly.getStackByName(stack.stackName).template);
  const out = {
    built,
    stateful: t(built.stateful),
    auth: built.auth && t(built.auth),
    coordinator: t(built.coordinator),
    files: t(built.files),
    dashboard: built.dashboard && t(built.dashboard),
    observability: t(built.observability),
  } satisfies Synth;
  synthesized.set(key, out);
  return out;
}

/**
 * An external identity provider with everything the coordinator needs of it (its token endpoint and client): no
 * Cognito in the app.
 */
export const EXTERNAL_IDP = {
  oidcIssuer: 'https://idp.example.org/realms/kf',
  oidcAudience: 'coordinator-api,files-api',
  tokenUrl: 'https://idp.example.org/realms/kf/token',
  clientId: 'release-coordinator',
  clientSecretArn: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:coordinator-AbCdEf',
};

/** An external issuer and its audiences alone, the least an operator may set instead of Cognito. */
export const EXTERNAL_ISSUER = {
  oidcIssuer: 'https://idp.example.org/realms/kf',
  oidcAudience: 'coordinator-api,files-api',
};

export const logicalId = (c: IConstruct) => Stack.of(c).getLogicalId(c.node.defaultChild as CfnElement);

export type Statement = { Action: string | string[]; Resource: unknown; Effect: string; Condition?: unknown };
export const actionsOf = (s: Statement) => (Array.isArray(s.Action) ? s.Action : [s.Action]);

/** Every Allow statement attached to a role, by the role's logical id. */
export function statementsOfRole(template: Template, roleId: string): Statement[] {
  const out: Statement[] = [];
  for (const policy of Object.values(template.findResources('AWS::IAM::Policy'))) {
    const roles = policy.Properties.Roles as { Ref: string }[];
    if (roles.some((r) => r.Ref === roleId)) out.push(...policy.Properties.PolicyDocument.Statement);
  }
  return out;
}

/** The names of every Fn::ImportValue inside a value (a cross-stack reference). */
export function collectImports(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) for (const v of value) collectImports(v, out);
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === 'Fn::ImportValue' && typeof v === 'string') out.push(v);
      else collectImports(v, out);
    }
  }
  return out;
}

/** Maps the stateful stack's exports back to the table each one names. */
export function tableOfExport(s: Synth): (exportName: string) => TableKey | undefined {
  const byLogicalId = new Map<string, TableKey>();
  for (const key of Object.keys(TABLES) as TableKey[])
    byLogicalId.set(logicalId(s.built.stateful.tables[key]), key);
  const outputs = s.stateful.toJSON().Outputs as Record<string, { Value: any; Export?: { Name: string } }>;
  return (exportName) => {
    const output = Object.values(outputs).find((o) => o.Export?.Name === exportName);
    const target = output?.Value?.['Fn::GetAtt']?.[0] ?? output?.Value?.Ref;
    return target ? byLogicalId.get(target) : undefined;
  };
}

/** Maps the stateful stack's exports back to the table and the attribute (Arn, StreamArn) each one carries. */
export function tableAttributeOfExport(s: Synth): (exportName: string) => [TableKey, string] | undefined {
  const tableOf = tableOfExport(s);
  const outputs = s.stateful.toJSON().Outputs as Record<string, { Value: any; Export?: { Name: string } }>;
  return (exportName) => {
    const key = tableOf(exportName);
    const output = Object.values(outputs).find((o) => o.Export?.Name === exportName);
    const attribute = output?.Value?.['Fn::GetAtt']?.[1];
    return key && attribute ? [key, attribute] : undefined;
  };
}

export const WRITE_ACTIONS = [
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:BatchWriteItem',
];

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

/**
 * The release state machine file as CDK deploys it: DefinitionBody.fromFile leaves the file untouched and
 * CloudFormation applies DefinitionSubstitutions (`${Key}` -> value). These helpers do the same with fake ARNs so
 * the result can be validated with asl-validator (or run locally).
 */
export const RELEASE_ASL_PATH = join(import.meta.dirname, '..', '..', 'statemachines', 'release.asl.json');

export const FAKE_ACCOUNT = '123456789012';
export const FAKE_REGION = 'us-east-1';
export const fakeFunctionArn = (name: string) =>
  `arn:aws:lambda:${FAKE_REGION}:${FAKE_ACCOUNT}:function:${name}`;

export function readReleaseAsl(): string {
  return readFileSync(RELEASE_ASL_PATH, 'utf8');
}

/** Every `${Key}` placeholder the definition uses. */
export function placeholders(text: string): string[] {
  return [...new Set([...text.matchAll(/\$\{([A-Za-z0-9_]+)\}/g)].map((m) => m[1]))].sort();
}

/** Applies the substitutions; a placeholder without a value is an error, exactly as it would break a deploy. */
export function substitute(text: string, substitutions: Record<string, string>): unknown {
  const missing = placeholders(text).filter((key) => !(key in substitutions));
  if (missing.length) throw new Error(`no substitution for ${missing.join(', ')}`);
  return JSON.parse(text.replace(/\$\{([A-Za-z0-9_]+)\}/g, (_, key: string) => substitutions[key]));
}

const PSEUDO: Record<string, string> = {
  'AWS::Partition': 'aws',
  'AWS::Region': FAKE_REGION,
  'AWS::AccountId': FAKE_ACCOUNT,
  'AWS::URLSuffix': 'amazonaws.com',
};

/**
 * Resolves the CloudFormation intrinsics CDK emits for ARNs (GetAtt of a function's Arn, Ref, Join, ImportValue)
 * into plain strings: pseudo parameters become the fake account/region, a GetAtt becomes a fake function ARN that
 * carries the logical id, an import becomes its export name.
 */
export function resolveCfn(value: unknown): string {
  if (typeof value === 'string') return value;
  const v = value as Record<string, any>;
  if (v['Fn::Join']) return v['Fn::Join'][1].map(resolveCfn).join(v['Fn::Join'][0]);
  if (v.Ref) return PSEUDO[v.Ref] ?? `ref-${v.Ref}`;
  if (v['Fn::ImportValue']) return String(v['Fn::ImportValue']);
  if (v['Fn::GetAtt']) return fakeFunctionArn(String(v['Fn::GetAtt'][0]));
  throw new Error(`unsupported intrinsic ${JSON.stringify(value)}`);
}

type Validator = (definition: unknown) => { isValid: boolean; errorsText: (sep?: string) => string };
const require = createRequire(import.meta.url);
const aslValidator = require('asl-validator') as Validator;

/** asl-validator's verdict: valid, or the errors as one readable string. */
export function validateAsl(definition: unknown): { isValid: boolean; errors: string } {
  const result = aslValidator(definition);
  return { isValid: result.isValid, errors: result.errorsText('\n') };
}

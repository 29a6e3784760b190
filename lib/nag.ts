import { Stack, Validations } from 'aws-cdk-lib';
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference.js';
import type { IConstruct } from 'constructs';

/**
 * Acknowledges one wildcard-resource finding (AwsSolutions-IAM5) for exactly one resource pattern on `scope`.
 * cdk-nag 3 matches finding ids literally (`AwsSolutions-IAM5[Resource::<flattened ARN>]`), so the id is computed
 * the way cdk-nag flattens the resolved value. Only resources made of same-stack references and pseudo parameters
 * can be resolved this early; a cross-stack reference would only get its export name later.
 */
export function acknowledgeWildcardResource(scope: IConstruct, resource: string, reason: string): void {
  const flattened = flattenCfnReference(Stack.of(scope).resolve(resource));
  Validations.of(scope).acknowledge({ id: `AwsSolutions-IAM5[Resource::${flattened}]`, reason });
}

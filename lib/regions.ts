import { Token } from 'aws-cdk-lib';
import { RegionInfo } from 'aws-cdk-lib/region-info';

/**
 * The AWS partitions this app deploys to: the commercial one. The others lack parts of it or differ where it
 * depends on them: CloudFront (the dashboard) is a commercial-partition service, Cognito's managed login and its
 * hosted domain are not offered in every partition, service principals and domain suffixes differ (aws-cn), and
 * none of them has been tried. docs/deploy.md (Regions) says the same.
 */
export const SUPPORTED_PARTITIONS = ['aws'] as const;

/**
 * Refuses, at synth, a region outside the supported partitions, with a message that says why, before any construct
 * (or cdk-nag) sees it. An unresolved region (an env-agnostic app: the CDK CLI always gives one) is left to the
 * deployment.
 */
export function assertSupportedRegion(region: string | undefined): void {
  if (region === undefined || Token.isUnresolved(region)) return;
  const partition = RegionInfo.get(region).partition;
  const supported = SUPPORTED_PARTITIONS.join(', ');
  if (partition === undefined)
    throw new Error(
      `Region "${region}" is not a region this version of aws-cdk-lib knows, so its partition cannot be checked. ` +
        `This app deploys to the ${supported} partition only (docs/deploy.md, Regions): set AWS_REGION (or ` +
        'CDK_DEFAULT_REGION) to one of its regions, e.g. us-east-1 or eu-west-1.',
    );
  if (!(SUPPORTED_PARTITIONS as readonly string[]).includes(partition))
    throw new Error(
      `Region "${region}" is in the ${partition} partition; this app deploys to the ${supported} partition only ` +
        '(CloudFront, Cognito managed login and the service principals it uses are those of the commercial ' +
        'partition; docs/deploy.md, Regions). Choose a region such as us-east-1 or eu-west-1.',
    );
}

import ipaddr from 'ipaddr.js';
import { z } from 'zod';
import { isPrivateNetwork } from '#functions/coordinator/url-policy.js';

/**
 * The deploy settings that are objects or lists (given as JSON with `-c key='{...}'`, or as JSON values in cdk.json):
 * the task-service network, the organisation's identity provider and the custom domains. Checked with zod like every
 * other setting (lib/settings.ts).
 */

const id = (prefix: string) =>
  z.string().regex(new RegExp(`^${prefix}-[0-9a-f]{8,17}$`), `an id such as ${prefix}-0123456789abcdef0`);

/**
 * An existing VPC, given in full so that no lookup is needed (an account without credentials can synthesize it):
 * its private subnets (with a route to the operator's NAT) and their availability zones, in the same order. Functions
 * that call task services run in those subnets. The route tables of the subnets, when given, get the DynamoDB and S3
 * gateway endpoints; `gatewayEndpoints: false` leaves the VPC's own endpoints alone.
 */
export const vpcSetting = z
  .strictObject({
    vpcId: id('vpc'),
    privateSubnetIds: z.array(id('subnet')).min(1),
    availabilityZones: z
      .array(z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d[a-z]$/, 'a zone name such as eu-west-1a'))
      .min(1),
    privateSubnetRouteTableIds: z.array(id('rtb')).min(1).optional(),
    gatewayEndpoints: z.boolean().default(true),
  })
  .superRefine((v, ctx) => {
    if (v.availabilityZones.length !== v.privateSubnetIds.length)
      ctx.addIssue({
        code: 'custom',
        path: ['availabilityZones'],
        message: 'one per private subnet, in the same order',
      });
    if (v.privateSubnetRouteTableIds && v.privateSubnetRouteTableIds.length !== v.privateSubnetIds.length)
      ctx.addIssue({
        code: 'custom',
        path: ['privateSubnetRouteTableIds'],
        message: 'one per private subnet, in the same order',
      });
  });
export type VpcSetting = z.infer<typeof vpcSetting>;

/** A CIDR block of private addresses (RFC 1918, shared, unique-local IPv6), in its canonical form. */
export const privateNetwork = z.string().transform((cidr, ctx) => {
  let parsed: [ipaddr.IPv4 | ipaddr.IPv6, number];
  try {
    parsed = ipaddr.parseCIDR(cidr.trim());
  } catch {
    ctx.addIssue({ code: 'custom', message: `${cidr} is not a CIDR block (e.g. 10.20.0.0/16)` });
    return z.NEVER;
  }
  const canonical = `${parsed[0].toString()}/${parsed[1]}`;
  if (!isPrivateNetwork(canonical)) {
    ctx.addIssue({
      code: 'custom',
      message: `${cidr} is not inside a private range (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10, fc00::/7)`,
    });
    return z.NEVER;
  }
  return canonical;
});

/**
 * The organisation's OpenID Connect identity provider, federated into the Cognito user pool: people sign in there,
 * and the claim `rolesClaim` of its ID token (a list or a comma- or space-separated string) becomes their groups,
 * so it carries roles (`admin`) and study ids.
 */
export const identityProviderSetting = z.strictObject({
  /** The provider's name on Cognito's sign-in page and in its identities. */
  name: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9 ._-]{0,31}$/, 'up to 32 letters, digits, spaces, dots, dashes')
    .default('Organization'),
  issuer: z.string().url().startsWith('https://', 'an https:// issuer URL'),
  clientId: z.string().min(1),
  /** A Secrets Manager secret whose value is the client secret (a plain string). */
  clientSecretArn: z.string().regex(/^arn:aws[a-z-]*:secretsmanager:/, 'a Secrets Manager secret ARN'),
  /** The claim of the provider's tokens that lists a person's roles or groups. */
  rolesClaim: z.string().min(1).default('groups'),
  /** The scopes Cognito asks the provider for; they must make it send `rolesClaim`. */
  scopes: z.array(z.string().min(1)).default(['openid', 'email', 'profile']),
});
export type IdentityProviderSetting = z.infer<typeof identityProviderSetting>;

/** An ACM certificate ARN. CloudFront takes only certificates of us-east-1 (checked where the dashboard needs it). */
export const certificateArn = z
  .string()
  .regex(/^arn:aws[a-z-]*:acm:[a-z0-9-]+:\d{12}:certificate\/[A-Za-z0-9-]+$/, 'an ACM certificate ARN');

export const domainName = z
  .string()
  .regex(/^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/, 'a lower-case DNS name');

/** The region of an ARN (its fourth field). */
export const regionOfArn = (arn: string) => arn.split(':')[3];

/** The settings given as JSON when they arrive as text (`-c vpc='{...}'`). */
export const JSON_SETTINGS = [
  'functionEnv',
  'vpc',
  'identityProvider',
  'taskServiceNetworks',
  'restoredTables',
  'deployedIndexes',
] as const;

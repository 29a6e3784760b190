import { Annotations, Stack } from 'aws-cdk-lib';
import {
  CfnVPCEndpoint,
  type ISecurityGroup,
  type IVpc,
  SecurityGroup,
  type SubnetSelection,
  Vpc,
} from 'aws-cdk-lib/aws-ec2';
import { Construct } from 'constructs';
import type { VpcSetting } from './settings-objects.js';

/** Where a function that calls task services runs (ServiceFunctionProps.network). */
export interface FunctionNetwork {
  vpc: IVpc;
  subnets: SubnetSelection;
  securityGroups: ISecurityGroup[];
}

/**
 * The operator's VPC, for the functions that call task services (lib/capabilities.ts `taskServiceNetwork`): the
 * release steps, the registration probe, the health check and the study sync. It is imported from its attributes
 * (the `vpc` setting), never looked up, so an account without credentials can synthesize it.
 *
 * The functions run in its private subnets, with one security group that opens nothing inbound and allows every
 * outbound connection: task services on whatever ports they serve, and everything else through the operator's NAT
 * (Cognito's token endpoint has no PrivateLink for client credentials, nor do Step Functions' task tokens need one).
 * Gateway endpoints for DynamoDB and S3, which cost nothing, keep the tables' and the bucket's traffic off the NAT.
 */
export class TaskServiceNetwork extends Construct {
  readonly vpc: IVpc;
  readonly securityGroup: SecurityGroup;
  readonly endpoints: CfnVPCEndpoint[] = [];

  constructor(scope: Construct, id: string, props: { setting: VpcSetting }) {
    super(scope, id);
    const v = props.setting;
    this.vpc = Vpc.fromVpcAttributes(this, 'Vpc', {
      vpcId: v.vpcId,
      availabilityZones: v.availabilityZones,
      privateSubnetIds: v.privateSubnetIds,
      privateSubnetRouteTableIds: v.privateSubnetRouteTableIds,
    });
    this.securityGroup = new SecurityGroup(this, 'TaskServiceCallers', {
      vpc: this.vpc,
      description: 'Functions that call task services: no inbound, all outbound (task services, NAT)',
      allowAllOutbound: true,
    });
    if (!v.gatewayEndpoints) return;
    const region = Stack.of(this).region;
    for (const [name, service] of [
      ['DynamoDb', 'dynamodb'],
      ['S3', 's3'],
    ] as const) {
      this.endpoints.push(
        new CfnVPCEndpoint(this, `${name}Endpoint`, {
          vpcId: v.vpcId,
          vpcEndpointType: 'Gateway',
          serviceName: `com.amazonaws.${region}.${service}`,
          ...(v.privateSubnetRouteTableIds ? { routeTableIds: v.privateSubnetRouteTableIds } : {}),
        }),
      );
    }
    if (!v.privateSubnetRouteTableIds)
      Annotations.of(this).addWarningV2(
        '@release-coordinator/vpc:route-tables',
        'The DynamoDB and S3 gateway endpoints are made without route tables: give vpc.privateSubnetRouteTableIds ' +
          "(the private subnets' route tables) so they carry that traffic, or gatewayEndpoints: false when the VPC " +
          'has its own.',
      );
  }

  /** What ServiceFunction needs to put a function in the private subnets. */
  get functionNetwork(): FunctionNetwork {
    return {
      vpc: this.vpc,
      subnets: { subnets: this.vpc.privateSubnets },
      securityGroups: [this.securityGroup],
    };
  }
}

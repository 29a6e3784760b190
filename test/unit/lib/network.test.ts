import { App } from 'aws-cdk-lib';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { capabilitiesOf } from '#lib/capabilities.js';
import { readSettings } from '#lib/settings.js';
import { EXAMPLE_VPC, logicalId, synth } from './app-fixture.js';

/**
 * The task-service network (lib/network.ts, the `vpc` and `taskServiceNetworks` settings): the functions that call
 * task services run in the operator's private subnets, imported without a lookup, with gateway endpoints for DynamoDB
 * and S3; every other function stays out of the VPC. Without the setting, nothing is in a VPC.
 *
 * @covers lib/network.ts
 */
const ENV = { account: '123456789012', region: 'eu-west-1' };
const VPC = EXAMPLE_VPC;
const IN_VPC = ['ReleaseStep', 'HealthCheck', 'StudySync', 'TaskServices'];

describe('the task-service network', () => {
  const s = synth(ENV, { vpc: JSON.stringify(VPC), taskServiceNetworks: '10.20.0.0/16,10.30.0.0/16' });
  const coordinator = s.built.coordinator;
  const fns = s.coordinator.findResources('AWS::Lambda::Function');

  it('puts the functions that call task services, the health check and the study sync in the private subnets', () => {
    expect(IN_VPC.every((name) => capabilitiesOf(name).taskServiceNetwork)).toBe(true);
    const sg = logicalId(coordinator.network?.securityGroup as never);
    for (const [name, fn] of Object.entries(coordinator.functions)) {
      const props = fns[logicalId(fn.fn)].Properties;
      if (IN_VPC.includes(name)) {
        expect(props.VpcConfig, name).toEqual({
          SubnetIds: VPC.privateSubnetIds,
          SecurityGroupIds: [{ 'Fn::GetAtt': [sg, 'GroupId'] }],
        });
        expect(props.Environment.Variables.TASK_SERVICE_NETWORKS, name).toBe('10.20.0.0/16,10.30.0.0/16');
        // Lambda makes the function's network interfaces with the function's own role.
        const role = s.coordinator.toJSON().Resources[logicalId(fn.role)].Properties;
        expect(JSON.stringify(role.ManagedPolicyArns), name).toContain(
          'policy/service-role/AWSLambdaVPCAccessExecutionRole',
        );
      } else {
        expect(props.VpcConfig, name).toBeUndefined();
        expect(props.Environment.Variables.TASK_SERVICE_NETWORKS, name).toBeUndefined();
      }
    }
    for (const fn of Object.values(s.files.findResources('AWS::Lambda::Function')))
      expect(fn.Properties.VpcConfig).toBeUndefined();
  });

  it('imports the VPC from its attributes (no lookup), opens nothing inbound and lets everything out', () => {
    expect(JSON.stringify(s.coordinator.toJSON())).not.toContain('dummy');
    s.coordinator.hasResourceProperties('AWS::EC2::SecurityGroup', {
      VpcId: VPC.vpcId,
      SecurityGroupEgress: [Match.objectLike({ CidrIp: '0.0.0.0/0', IpProtocol: '-1' })],
      SecurityGroupIngress: Match.absent(),
    });
  });

  it('keeps DynamoDB and S3 traffic off the NAT with gateway endpoints on the private route tables', () => {
    const endpoints = Object.values(s.coordinator.findResources('AWS::EC2::VPCEndpoint')).map(
      (e) => e.Properties,
    );
    expect(endpoints).toHaveLength(2);
    for (const [e, service] of [
      [endpoints[0], 'dynamodb'],
      [endpoints[1], 's3'],
    ] as const)
      expect(e).toEqual({
        VpcId: VPC.vpcId,
        VpcEndpointType: 'Gateway',
        ServiceName: `com.amazonaws.eu-west-1.${service}`,
        RouteTableIds: VPC.privateSubnetRouteTableIds,
      });
  });

  it('without route tables the endpoints are made unattached, with a warning; gatewayEndpoints: false makes none', () => {
    const { privateSubnetRouteTableIds: _, ...bare } = VPC;
    const noRoutes = synth(ENV, { vpc: { ...bare } });
    for (const e of Object.values(noRoutes.coordinator.findResources('AWS::EC2::VPCEndpoint')))
      expect(e.Properties.RouteTableIds).toBeUndefined();
    Annotations.fromStack(noRoutes.built.coordinator).hasWarning(
      '*',
      Match.stringLikeRegexp('privateSubnetRouteTableIds'),
    );
    const none = synth(ENV, { vpc: { ...VPC, gatewayEndpoints: false } });
    none.coordinator.resourceCountIs('AWS::EC2::VPCEndpoint', 0);
  });

  it('without the setting, no function is in a VPC and no network resource exists', () => {
    const plain = synth(ENV);
    for (const fn of Object.values(plain.coordinator.findResources('AWS::Lambda::Function')))
      expect(fn.Properties.VpcConfig).toBeUndefined();
    plain.coordinator.resourceCountIs('AWS::EC2::VPCEndpoint', 0);
    plain.coordinator.resourceCountIs('AWS::EC2::SecurityGroup', 0);
  });
});

describe('the network settings', () => {
  const settings = (context: Record<string, unknown>) => readSettings(new App({ context }).node);

  it('refuses task-service networks without a VPC, outside the private ranges, or set through functionEnv', () => {
    expect(() => settings({ taskServiceNetworks: '10.0.0.0/16' })).toThrow(/taskServiceNetworks: needs vpc/);
    expect(() => settings({ vpc: VPC, taskServiceNetworks: '8.8.8.0/24' })).toThrow(
      /8\.8\.8\.0\/24 is not inside a private range/,
    );
    expect(() => settings({ vpc: VPC, functionEnv: { TASK_SERVICE_NETWORKS: '10.0.0.0/8' } })).toThrow(
      /functionEnv\.TASK_SERVICE_NETWORKS/,
    );
    expect(settings({ vpc: VPC, taskServiceNetworks: ['10.20.0.0/16'] }).taskServiceNetworks).toEqual([
      '10.20.0.0/16',
    ]);
  });

  it('refuses a VPC whose zones or route tables do not pair with its subnets, or ids of the wrong kind', () => {
    expect(() => settings({ vpc: { ...VPC, availabilityZones: ['eu-west-1a'] } })).toThrow(
      /vpc\.availabilityZones: one per private subnet/,
    );
    expect(() =>
      settings({ vpc: { ...VPC, privateSubnetRouteTableIds: ['rtb-0ccccccccccccccc3'] } }),
    ).toThrow(/vpc\.privateSubnetRouteTableIds: one per private subnet/);
    expect(() => settings({ vpc: { ...VPC, vpcId: 'subnet-0aaaaaaaaaaaaaaa1' } })).toThrow(/vpc\.vpcId/);
    expect(() => settings({ vpc: '{not json' })).toThrow(/vpc/);
  });
});

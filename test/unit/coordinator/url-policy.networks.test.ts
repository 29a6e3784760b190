import { describe, expect, it } from 'vitest';
import { urlPolicyFromEnv } from '#functions/adapters/task-service-client.js';
import { addressRefusal, checkServiceUrl, isPrivateNetwork } from '#functions/coordinator/url-policy.js';

/**
 * TASK_SERVICE_NETWORKS (the `taskServiceNetworks` deploy setting): with the functions in the operator's VPC, the
 * private addresses of the listed networks may be called, and no other private address.
 */
const IN_VPC = {
  allowPrivate: false,
  allowHttp: false,
  onAws: true,
  allowNetworks: ['10.20.0.0/16', 'fd12:3456::/32'],
};

describe('task-service networks', () => {
  it('allows the listed private networks, IPv4 and IPv6', () => {
    for (const address of ['10.20.0.5', '10.20.255.254', 'fd12:3456::1', '::ffff:10.20.1.1'])
      expect(addressRefusal(address, IN_VPC), address).toBeNull();
    expect(checkServiceUrl('https://10.20.3.4:8443/svc', IN_VPC)).toBe('https://10.20.3.4:8443/svc');
  });

  it('refuses every other private address, and loopback, metadata and link-local as before', () => {
    for (const address of [
      '10.21.0.1',
      '172.16.0.1',
      '192.168.1.1',
      '100.64.0.1',
      'fd12:3457::1',
      '198.18.0.1',
    ])
      expect(addressRefusal(address, IN_VPC), address).toMatch(/TASK_SERVICE_NETWORKS/);
    expect(addressRefusal('127.0.0.1', IN_VPC)).toMatch(/loopback/);
    expect(addressRefusal('169.254.169.254', IN_VPC)).toMatch(/instance-metadata/);
    expect(addressRefusal('169.254.10.1', IN_VPC)).toMatch(/link-local/);
    // Public addresses are not the networks' business.
    expect(addressRefusal('8.8.8.8', IN_VPC)).toBeNull();
  });

  it('without the networks, a private address is refused as it always was', () => {
    const { allowNetworks: _, ...plain } = IN_VPC;
    expect(addressRefusal('10.20.0.5', plain)).toMatch(/private address/);
  });

  it('reads TASK_SERVICE_NETWORKS, refusing a block that is not private', () => {
    expect(urlPolicyFromEnv({ TASK_SERVICE_NETWORKS: '10.20.0.0/16, 192.168.4.0/24' })).toEqual({
      allowPrivate: false,
      allowHttp: false,
      allowNetworks: ['10.20.0.0/16', '192.168.4.0/24'],
    });
    expect(urlPolicyFromEnv({})).toEqual({ allowPrivate: false, allowHttp: false });
    expect(() => urlPolicyFromEnv({ TASK_SERVICE_NETWORKS: '10.0.0.0/8,8.8.8.0/24' })).toThrow(
      /TASK_SERVICE_NETWORKS: 8\.8\.8\.0\/24 is not a private CIDR block/,
    );
  });

  it('a private network lies wholly inside a private range', () => {
    for (const cidr of [
      '10.0.0.0/8',
      '10.20.0.0/16',
      '172.31.0.0/16',
      '192.168.0.0/24',
      '100.64.0.0/10',
      'fd00::/8',
    ])
      expect(isPrivateNetwork(cidr), cidr).toBe(true);
    for (const cidr of [
      '0.0.0.0/0',
      '10.0.0.0/7',
      '172.0.0.0/8',
      '8.8.8.0/24',
      '127.0.0.0/8',
      '169.254.0.0/16',
      'x',
    ])
      expect(isPrivateNetwork(cidr), cidr).toBe(false);
  });
});

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTaskServiceClient } from '#functions/adapters/task-service-client.js';
import { addressRefusal, checkServiceUrl, runsOnAws } from '#functions/coordinator/url-policy.js';

const strict = { allowPrivate: false, allowHttp: false };
const open = { allowPrivate: true, allowHttp: true };

describe('task-service URL rules', () => {
  it('refuses the instance-metadata addresses and every link-local address, whatever the settings', () => {
    for (const ip of ['169.254.169.254', 'fd00:ec2::254'])
      expect(addressRefusal(ip, open)).toMatch(/metadata/);
    for (const ip of ['169.254.0.1', '169.254.255.254', 'fe80::1', '::ffff:169.254.169.254'])
      expect(addressRefusal(ip, open)).toMatch(/link-local|metadata/);
  });

  it('refuses loopback and private addresses unless TASK_SERVICE_ALLOW_PRIVATE=true', () => {
    const inner = [
      '127.0.0.1',
      '127.8.9.10',
      '10.0.0.1',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      '::',
      'fc00::1',
      'fd12:3456::1',
      '::ffff:10.1.2.3',
    ];
    for (const ip of inner) {
      expect(addressRefusal(ip, strict), ip).toMatch(/TASK_SERVICE_ALLOW_PRIVATE/);
      expect(addressRefusal(ip, open), ip).toBeNull();
    }
    for (const ip of ['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700::1111'])
      expect(addressRefusal(ip, strict), ip).toBeNull();
  });

  it('judges the IPv6 forms of metadata, loopback and private IPv4 addresses as those IPv4 addresses', () => {
    const local = { ...open, onAws: false };
    // IPv4-compatible (::a.b.c.d), IPv4-mapped, SIIT, NAT64 and 6to4 forms of the metadata address.
    for (const ip of [
      '::169.254.169.254',
      '::a9fe:a9fe',
      '::ffff:a9fe:a9fe',
      '::ffff:0:a9fe:a9fe',
      '64:ff9b::a9fe:a9fe',
      '64:ff9b::169.254.169.254',
      '2002:a9fe:a9fe::1',
    ])
      expect(addressRefusal(ip, local), ip).toMatch(/metadata/);
    expect(addressRefusal('2002:a9fe:0101::', local)).toMatch(/link-local/);
    // Loopback and private IPv4 inside IPv6: refused like the IPv4 address without ALLOW_PRIVATE.
    for (const ip of [
      '::127.0.0.1',
      '::7f00:1',
      '::ffff:0:7f00:1',
      '64:ff9b::7f00:1',
      '2002:7f00:0001::1',
      '2002:0a00:0001::1',
      '2002:c0a8:0101:1::1',
      '64:ff9b::10.1.2.3',
    ]) {
      expect(addressRefusal(ip, strict), ip).toMatch(/TASK_SERVICE_ALLOW_PRIVATE/);
      expect(addressRefusal(ip, local), ip).toBeNull();
    }
    // Forms whose IPv4 address cannot be judged, and the deprecated site-local range: always refused.
    for (const ip of [
      '64:ff9b:1::a9fe:a9fe',
      '64:ff9b:1::808:808',
      'fec0::1',
      'feff::1',
      '2001:0:4136:e378::1',
    ])
      expect(addressRefusal(ip, open), ip).toMatch(/always refused/);
    // Public IPv4 addresses behind NAT64 or 6to4 stay reachable.
    for (const ip of ['64:ff9b::808:808', '2002:0808:0808::1', '2606:4700::1111'])
      expect(addressRefusal(ip, strict), ip).toBeNull();
    const refusal = (url: string) => {
      try {
        checkServiceUrl(url, strict);
        return null;
      } catch (err) {
        return (err as { fields?: Record<string, string[]> }).fields?.url?.[0] ?? 'no field';
      }
    };
    expect(refusal('https://[::169.254.169.254]/')).toMatch(/metadata/);
    expect(refusal('https://[::a9fe:a9fe]/')).toMatch(/metadata/);
    expect(refusal('https://[::127.0.0.1]:8080/')).toMatch(/TASK_SERVICE_ALLOW_PRIVATE/);
    expect(refusal('https://[64:ff9b:1::a9fe:a9fe]/')).toMatch(/always refused/);
    expect(refusal('https://[fec0::1]/')).toMatch(/always refused/);
  });

  it('never opens loopback on AWS, whatever TASK_SERVICE_ALLOW_PRIVATE says; private ranges still open', () => {
    const aws = { ...open, onAws: true };
    for (const ip of ['127.0.0.1', '127.0.0.53', '::1', '::ffff:127.0.0.1', '::127.0.0.1', '0.0.0.0', '::'])
      expect(addressRefusal(ip, aws), ip).toMatch(/always refused on AWS/);
    for (const ip of ['169.254.169.254', '169.254.100.1', 'fe80::1'])
      expect(addressRefusal(ip, aws), ip).toMatch(/always refused/);
    expect(addressRefusal('10.0.0.1', aws)).toBeNull();
    expect(addressRefusal('127.0.0.1', { ...open, onAws: false })).toBeNull();
    // How the code knows: the variables Lambda (and other AWS compute) sets; the local stack has none of them.
    expect(runsOnAws({ AWS_LAMBDA_FUNCTION_NAME: 'Coordinator' })).toBe(true);
    expect(runsOnAws({ AWS_LAMBDA_RUNTIME_API: '127.0.0.1:9001' })).toBe(true);
    expect(runsOnAws({ AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x' })).toBe(true);
    expect(runsOnAws({})).toBe(false);
    // Unset, the policy reads the environment.
    const saved = process.env.AWS_LAMBDA_FUNCTION_NAME;
    process.env.AWS_LAMBDA_FUNCTION_NAME = 'Coordinator';
    try {
      expect(addressRefusal('127.0.0.1', open)).toMatch(/always refused on AWS/);
    } finally {
      if (saved === undefined) delete process.env.AWS_LAMBDA_FUNCTION_NAME;
      else process.env.AWS_LAMBDA_FUNCTION_NAME = saved;
    }
    expect(addressRefusal('127.0.0.1', open)).toBeNull();
  });

  it('accepts http or https URLs with a host and no credentials, naming the rule that refused any other', () => {
    const refusal = (url: string, policy = open) => {
      try {
        checkServiceUrl(url, policy);
        return null;
      } catch (err) {
        return (err as { fields?: Record<string, string[]> }).fields?.url?.[0] ?? 'no field';
      }
    };
    expect(refusal('ftp://files.example.com')).toMatch(/http or https/);
    expect(refusal('not a url')).toMatch(/http or https/);
    expect(refusal('http://user:secret@svc.example.com')).toMatch(/credentials/);
    expect(refusal('http://svc.example.com', strict)).toMatch(/TASK_SERVICE_ALLOW_HTTP/);
    expect(refusal('https://169.254.169.254/latest')).toMatch(/metadata/);
    expect(refusal('https://[fd00:ec2::254]')).toMatch(/metadata/);
    expect(refusal('https://10.0.0.8', strict)).toMatch(/TASK_SERVICE_ALLOW_PRIVATE/);
    expect(refusal('https://svc.example.com/base/', strict)).toBeNull();
    expect(checkServiceUrl('https://svc.example.com/base//', strict)).toBe('https://svc.example.com/base');
  });
});

describe('the task-service client at call time', () => {
  let server: Server;
  let port: number;
  let hits = 0;
  beforeAll(async () => {
    server = createServer((_req, res) => {
      hits++;
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"name":"svc"}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const tokens = { token: async () => 'coordinator-token' };

  it('checks the address a name resolves to when it connects, so DNS rebinding cannot reach a refused address', async () => {
    // The name may have looked public when it was registered; at call time it resolves to loopback.
    const client = createTaskServiceClient(tokens, {
      policy: { allowPrivate: false, allowHttp: true },
      resolve: async () => ['127.0.0.1'],
    });
    const out = await client.status(`http://rebind.example.test:${port}`, 2000);
    expect(out.ok).toBe(false);
    if (!out.ok) {
      expect(out.failure.kind).toBe('refused');
      expect(out.failure.message).toMatch(/127\.0\.0\.1.*TASK_SERVICE_ALLOW_PRIVATE/);
    }
    expect(hits).toBe(0);
  });

  it('connects to exactly the address it checked', async () => {
    const client = createTaskServiceClient(tokens, {
      policy: { allowPrivate: true, allowHttp: true },
      resolve: async () => ['127.0.0.1'],
    });
    const out = await client.status(`http://rebind.example.test:${port}`, 2000);
    expect(out).toMatchObject({ ok: true, body: { name: 'svc' } });
    expect(hits).toBe(1);
  });

  it('refuses a literal address and a plain-http URL by the same rules', async () => {
    const client = createTaskServiceClient(tokens, { policy: { allowPrivate: false, allowHttp: false } });
    const literal = await client.action(
      `https://127.0.0.1:${port}`,
      { action: 'get_status', task_id: 'TA_1', release_id: 'RE_1' },
      1000,
    );
    expect(literal).toMatchObject({ ok: false, failure: { kind: 'refused' } });
    const plain = await client.status('http://svc.example.test', 1000);
    expect(plain).toMatchObject({ ok: false, failure: { kind: 'refused' } });
    if (!plain.ok) expect(plain.failure.message).toMatch(/TASK_SERVICE_ALLOW_HTTP/);
    expect(hits).toBe(1);
  });
});

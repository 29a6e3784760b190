import { BlockList, isIP } from 'node:net';
import { ValidationError } from '../shared/errors.js';

/**
 * Which task-service URLs the coordinator will call (and send its token to). An admin registers the URL, but the
 * coordinator makes the requests from inside the deployment, so a URL could otherwise reach the instance-metadata
 * service or internal hosts (SSRF). The rules, checked at registration and again on every connection:
 *
 *   1. http or https, with a host, and no credentials in the URL;
 *   2. never an instance-metadata address (169.254.169.254, fd00:ec2::254) or any link-local address;
 *   3. loopback, private, shared (CGNAT), unspecified and unique-local addresses only with TASK_SERVICE_ALLOW_PRIVATE;
 *   4. plain http only with TASK_SERVICE_ALLOW_HTTP;
 *   5. multicast, broadcast and reserved addresses never.
 *
 * Rule 2 and 3 apply to the address a name resolves to when the connection is made (task-service-client.ts checks
 * it in its DNS lookup), so a name that resolves elsewhere later (DNS rebinding) is refused then.
 */
export interface UrlPolicy {
  /** TASK_SERVICE_ALLOW_PRIVATE: loopback and private ranges may be called (the local stack sets it). */
  allowPrivate: boolean;
  /** TASK_SERVICE_ALLOW_HTTP: plain http may be used (the local stack sets it). */
  allowHttp: boolean;
}

export const PRIVATE_RULE =
  'loopback and private addresses are refused unless TASK_SERVICE_ALLOW_PRIVATE=true';
export const HTTP_RULE = 'plain http is refused unless TASK_SERVICE_ALLOW_HTTP=true';

function ranges(v4: string[], v6: string[]): BlockList {
  const list = new BlockList();
  for (const cidr of v4) {
    const [net, bits] = cidr.split('/');
    list.addSubnet(net, Number(bits), 'ipv4');
  }
  for (const cidr of v6) {
    const [net, bits] = cidr.split('/');
    list.addSubnet(net, Number(bits), 'ipv6');
  }
  return list;
}

const METADATA = new Set(['169.254.169.254', 'fd00:ec2::254']);
const LINK_LOCAL = ranges(['169.254.0.0/16'], ['fe80::/10']);
const NEVER = ranges(
  ['224.0.0.0/4', '240.0.0.0/4', '192.0.0.0/24', '192.0.2.0/24', '198.51.100.0/24', '203.0.113.0/24'],
  ['ff00::/8', '2001:db8::/32', '100::/64'],
);
const INTERNAL = ranges(
  [
    '0.0.0.0/8',
    '10.0.0.0/8',
    '100.64.0.0/10',
    '127.0.0.0/8',
    '172.16.0.0/12',
    '192.168.0.0/16',
    '198.18.0.0/15',
  ],
  ['::/128', '::1/128', 'fc00::/7'],
);

/** An IPv4 address written inside an IPv6 one (::ffff:a.b.c.d, ::ffff:7f00:1, 64:ff9b::a.b.c.d) is judged as IPv4. */
function embeddedV4(address: string): string | null {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return dotted[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex) {
    const [a, b] = [Number.parseInt(hex[1], 16), Number.parseInt(hex[2], 16)];
    return `${a >> 8}.${a & 255}.${b >> 8}.${b & 255}`;
  }
  return null;
}

/** Why the coordinator must not connect to `address` (an IP literal), or null when it may. */
export function addressRefusal(address: string, policy: UrlPolicy): string | null {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const v4 = embeddedV4(bare);
  const ip = v4 ?? bare;
  const family = isIP(ip);
  if (family === 0) return `${address} is not an IP address`;
  const type = family === 4 ? 'ipv4' : 'ipv6';
  const shown = ip.toLowerCase();
  if (METADATA.has(shown) || (type === 'ipv6' && expandV6(shown) === expandV6('fd00:ec2::254')))
    return `${address} is an instance-metadata address, which is always refused`;
  if (LINK_LOCAL.check(ip, type)) return `${address} is a link-local address, which is always refused`;
  if (NEVER.check(ip, type)) return `${address} is a multicast or reserved address, which is always refused`;
  if (INTERNAL.check(ip, type) && !policy.allowPrivate)
    return `${address} is a loopback or private address; ${PRIVATE_RULE}`;
  return null;
}

function expandV6(ip: string): string {
  const [head, tail = ''] = ip.split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const fill = ip.includes('::') ? Array(8 - h.length - t.length).fill('0') : [];
  return [...h, ...fill, ...t].map((x) => x.padStart(4, '0')).join(':');
}

const refuse = (message: string) => new ValidationError(`Invalid url: ${message}`, { url: [message] });

/**
 * Checks a task-service URL against the rules that do not need DNS (a literal address is judged here too) and
 * returns its stored form: no trailing slash, no query or fragment. Every refusal is a 400 under `url` that says
 * which rule refused it.
 */
export function checkServiceUrl(raw: string, policy: UrlPolicy): string {
  const trimmed = raw.trim();
  let parsed: URL;
  try {
    parsed = new URL(trimmed);
  } catch {
    throw refuse('must be an absolute http or https URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw refuse('must be an absolute http or https URL');
  if (!parsed.hostname) throw refuse('must name a host');
  if (parsed.username || parsed.password) throw refuse('must not carry credentials (user:password@)');
  if (parsed.search || parsed.hash) throw refuse('must not carry a query or fragment');
  const host = parsed.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) || embeddedV4(host)) {
    const why = addressRefusal(host, policy);
    if (why) throw refuse(why);
  }
  if (parsed.protocol === 'http:' && !policy.allowHttp) throw refuse(HTTP_RULE);
  return trimmed.replace(/\/+$/, '');
}

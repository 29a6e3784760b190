import ipaddr from 'ipaddr.js';
import { ValidationError } from '../shared/errors.js';

/**
 * Which task-service URLs the coordinator will call (and send its token to). An admin registers the URL, but the
 * coordinator makes the requests from inside the deployment, so a URL could otherwise reach the instance-metadata
 * service or internal hosts (SSRF). The rules, checked at registration and again on every connection:
 *
 *   1. http or https, with a host, and no credentials in the URL;
 *   2. never an instance-metadata address (169.254.169.254, fd00:ec2::254) or any link-local address;
 *   3. loopback, private, shared (CGNAT), unspecified and unique-local addresses only with TASK_SERVICE_ALLOW_PRIVATE,
 *      and loopback and unspecified addresses never on AWS (the Lambda runtime API listens on loopback); private
 *      addresses inside the networks TASK_SERVICE_NETWORKS lists (a deployment's task services in its VPC) are
 *      allowed without it, and no other private address is;
 *   4. plain http only with TASK_SERVICE_ALLOW_HTTP;
 *   5. multicast, broadcast, documentation, deprecated and reserved addresses never.
 *
 * An IPv6 address that carries an IPv4 address (IPv4-mapped ::ffff:a.b.c.d, IPv4-compatible ::a.b.c.d, SIIT
 * ::ffff:0:a.b.c.d, NAT64 64:ff9b::a.b.c.d, 6to4 2002:aabb:ccdd::) is judged as that IPv4 address, because that is
 * where a translator or the kernel sends it. Forms whose IPv4 address cannot be read from the address alone (the
 * local-use NAT64 prefix 64:ff9b:1::/48, Teredo 2001::/32) and the deprecated site-local fec0::/10 are refused.
 * Parsing and range matching are ipaddr.js's.
 *
 * Rule 2 and 3 apply to the address a name resolves to when the connection is made (task-service-client.ts checks
 * it in its DNS lookup), so a name that resolves elsewhere later (DNS rebinding) is refused then.
 */
export interface UrlPolicy {
  /** TASK_SERVICE_ALLOW_PRIVATE: loopback and private ranges may be called (the local stack sets it). */
  allowPrivate: boolean;
  /** TASK_SERVICE_ALLOW_HTTP: plain http may be used (the local stack sets it). */
  allowHttp: boolean;
  /**
   * TASK_SERVICE_NETWORKS: private CIDR blocks whose addresses may be called although `allowPrivate` is off (the
   * operator's task-service networks, reached through the deployment's VPC).
   */
  allowNetworks?: string[];
  /**
   * Whether this runs on AWS (Lambda or another AWS compute), where loopback is never opened, whatever
   * `allowPrivate` says. Unset: read from the environment (runsOnAws).
   */
  onAws?: boolean;
}

export const PRIVATE_RULE =
  'loopback and private addresses are refused unless TASK_SERVICE_ALLOW_PRIVATE=true, and private ones outside the networks TASK_SERVICE_NETWORKS lists';
export const HTTP_RULE = 'plain http is refused unless TASK_SERVICE_ALLOW_HTTP=true';
export const AWS_LOOPBACK_RULE =
  'loopback addresses are always refused on AWS, whatever TASK_SERVICE_ALLOW_PRIVATE says (the Lambda runtime API listens there)';

/**
 * Lambda sets AWS_LAMBDA_FUNCTION_NAME and AWS_LAMBDA_RUNTIME_API (the runtime API's loopback address) in every
 * function's environment, and AWS compute sets AWS_EXECUTION_ENV (AWS_Lambda_nodejs22.x, AWS_ECS_FARGATE, ...).
 * The local stack runs the handlers in a plain Node process, which has none of them.
 */
export function runsOnAws(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(
    env.AWS_LAMBDA_FUNCTION_NAME || env.AWS_LAMBDA_RUNTIME_API || env.AWS_EXECUTION_ENV?.startsWith('AWS_'),
  );
}

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];
const cidrs = (list: string[]): Range[] => list.map((c) => ipaddr.parseCIDR(c));
const within = (ip: ipaddr.IPv4 | ipaddr.IPv6, list: Range[]) =>
  list.some(([net, bits]) => net.kind() === ip.kind() && ip.match(net, bits));

const METADATA = cidrs(['169.254.169.254/32', 'fd00:ec2::254/128']);
const LINK_LOCAL = cidrs(['169.254.0.0/16', 'fe80::/10']);
const NEVER = cidrs([
  '224.0.0.0/4', // multicast
  '240.0.0.0/4', // reserved, broadcast
  '192.0.0.0/24', // IETF protocol assignments
  '192.0.2.0/24', // documentation
  '192.88.99.0/24', // 6to4 relay anycast (deprecated)
  '198.51.100.0/24',
  '203.0.113.0/24',
  'ff00::/8', // multicast
  '2001:db8::/32', // documentation
  '3fff::/20', // documentation
  '100::/64', // discard
  'fec0::/10', // site-local, deprecated: the old private range
  '64:ff9b:1::/48', // local-use NAT64: which IPv4 address it reaches is the local translator's choice
  '2001::/32', // Teredo: tunnels to an IPv4 address hidden in the address
]);
const LOOPBACK = cidrs(['127.0.0.0/8', '0.0.0.0/8', '::1/128', '::/128']);
/** The private ranges an operator may list as task-service networks. */
const OPERATOR_PRIVATE = cidrs([
  '10.0.0.0/8',
  '100.64.0.0/10',
  '172.16.0.0/12',
  '192.168.0.0/16',
  'fc00::/7',
]);
const PRIVATE = [...OPERATOR_PRIVATE, ...cidrs(['198.18.0.0/15'])];

/** Whether a CIDR block lies wholly inside one of the private ranges (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7). */
export function isPrivateNetwork(cidr: string): boolean {
  let net: Range;
  try {
    net = ipaddr.parseCIDR(cidr);
  } catch {
    return false;
  }
  return OPERATOR_PRIVATE.some(
    ([range, bits]) => range.kind() === net[0].kind() && net[1] >= bits && net[0].match(range, bits),
  );
}
/** IPv6 forms that carry an IPv4 address in their last 32 bits. */
const V4_IN_LAST_32 = cidrs(['::ffff:0:0/96', '::/96', '::ffff:0:0:0/96', '64:ff9b::/96']);
const SIX_TO_FOUR = cidrs(['2002::/16']);

/** The IPv4 address an IPv6 address stands for, when it carries one (see the rules above). */
function embeddedV4(ip: ipaddr.IPv6): ipaddr.IPv4 | null {
  const p = ip.parts;
  if (within(ip, LOOPBACK)) return null; // ::1 and :: are in ::/96, but are IPv6's own
  if (within(ip, V4_IN_LAST_32)) return new ipaddr.IPv4([p[6] >> 8, p[6] & 255, p[7] >> 8, p[7] & 255]);
  if (within(ip, SIX_TO_FOUR)) return new ipaddr.IPv4([p[1] >> 8, p[1] & 255, p[2] >> 8, p[2] & 255]);
  return null;
}

/** Parses an IP literal (brackets and an IPv6 zone allowed); null when it is none. */
function parseIp(address: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  return ipaddr.isValid(bare) ? ipaddr.parse(bare) : null;
}

/** Why the coordinator must not connect to `address` (an IP literal), or null when it may. */
export function addressRefusal(address: string, policy: UrlPolicy): string | null {
  const parsed = parseIp(address);
  if (!parsed) return `${address} is not an IP address`;
  const v4 = parsed.kind() === 'ipv6' ? embeddedV4(parsed as ipaddr.IPv6) : null;
  const ip = v4 ?? parsed;
  const shown = v4 ? `${address} (IPv4 ${v4.toString()})` : address;
  if (within(ip, METADATA)) return `${shown} is an instance-metadata address, which is always refused`;
  if (within(ip, LINK_LOCAL)) return `${shown} is a link-local address, which is always refused`;
  if (within(ip, NEVER))
    return `${shown} is a multicast, reserved or deprecated address, which is always refused`;
  const loopback = within(ip, LOOPBACK);
  if (loopback && (policy.onAws ?? runsOnAws()))
    return `${shown} is a loopback address; ${AWS_LOOPBACK_RULE}`;
  if (loopback && !policy.allowPrivate) return `${shown} is a loopback or private address; ${PRIVATE_RULE}`;
  if (within(ip, PRIVATE) && !policy.allowPrivate && !within(ip, cidrs(policy.allowNetworks ?? [])))
    return `${shown} is a loopback or private address; ${PRIVATE_RULE}`;
  return null;
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
  if (parseIp(host)) {
    const why = addressRefusal(host, policy);
    if (why) throw refuse(why);
  }
  if (parsed.protocol === 'http:' && !policy.allowHttp) throw refuse(HTTP_RULE);
  return trimmed.replace(/\/+$/, '');
}

import { isIpAddress, isVirtualHostableS3Bucket, partition } from '@aws-sdk/core/client';
import { parseXML, XmlNode, XmlText } from '@aws-sdk/xml-builder';
import { getValueFromTextNode } from '@smithy/core/client';
import { extendedEncodeURIComponent, HttpRequest, type HttpResponse } from '@smithy/core/protocols';
import { toUtf8 } from '@smithy/core/serde';
import { type AwsHttp, drain, errorMetadata, type ServiceError, type ServiceSettings } from './aws-http.js';

/**
 * S3 requests on the signing core (functions/adapters/aws-http.ts), laid out as @aws-sdk/client-s3 lays them out:
 * the same addressing (virtual-hosted, or path-style with S3_FORCE_PATH_STYLE, a custom endpoint, an IP endpoint),
 * the same path encoding, query parameters and headers, and errors shaped as the SDK shapes S3's (`name` is S3's
 * error code, `NotFound` for a bodiless 404). test/unit/adapters/aws-signing.test.ts compares every request with the
 * one the SDK client sends, signature included.
 */

export interface S3Address {
  protocol: string;
  hostname: string;
  port?: number;
  /** The path every request of the bucket starts with: '' (virtual-hosted) or '/bucket', after any endpoint path. */
  base: string;
}

/**
 * Where a bucket's requests go, by the rules of the SDK's S3 endpoint ruleset for a plain bucket name: virtual-hosted
 * (`bucket.host`) when the name is a valid DNS label and neither path-style nor an IP endpoint is asked for, else
 * path-style (`host/bucket`). Configurations the ruleset refuses are refused with its message; S3 Express, access
 * point ARNs, Accelerate and the global endpoint are not used by this service and are refused too.
 */
export function s3Address(settings: ServiceSettings, bucket: string, forcePathStyle: boolean): S3Address {
  if (bucket.startsWith('arn:') || /--x-s3$|--xa-s3$/.test(bucket))
    throw new Error(`S3 bucket ${bucket}: access points and directory buckets are not supported here`);
  const { endpoint, region, useFipsEndpoint, useDualstackEndpoint } = settings;
  if (endpoint) {
    if (useFipsEndpoint) throw new Error('A custom endpoint cannot be combined with FIPS');
    if (useDualstackEndpoint) throw new Error('Cannot set dual-stack in combination with a custom endpoint.');
    const protocol = endpoint.protocol;
    const port = endpoint.port ? Number(endpoint.port) : undefined;
    // The ruleset's normalizedPath: the endpoint's path, always ending with a slash.
    const path = endpoint.pathname.endsWith('/') ? endpoint.pathname : `${endpoint.pathname}/`;
    if (!forcePathStyle && isVirtualHostableS3Bucket(bucket, false) && !isIpAddress(endpoint.hostname))
      return { protocol, hostname: `${bucket}.${endpoint.hostname}`, port, base: path.slice(0, -1) };
    return {
      protocol,
      hostname: endpoint.hostname,
      port,
      base: `${path}${extendedEncodeURIComponent(bucket)}`,
    };
  }
  if (region === 'aws-global') throw new Error('The aws-global region is not supported here');
  const p = partition(region);
  if (useFipsEndpoint && !p.supportsFIPS) throw new Error('Partition does not support FIPS');
  if (useDualstackEndpoint && !p.supportsDualStack)
    throw new Error('DualStack is enabled but this partition does not support DualStack');
  const host = `s3${useFipsEndpoint ? '-fips' : ''}${useDualstackEndpoint ? '.dualstack' : ''}.${region}.${p.dnsSuffix}`;
  if (!forcePathStyle && isVirtualHostableS3Bucket(bucket, false))
    return { protocol: 'https:', hostname: `${bucket}.${host}`, base: '' };
  return { protocol: 'https:', hostname: host, base: `/${extendedEncodeURIComponent(bucket)}` };
}

/**
 * What the SDK's S3 middleware adds that these requests never need: `Expect: 100-continue` goes on bodies of 2 MiB or
 * more (the largest body here, a CompleteMultipartUpload of 4,000 parts, stays near 1 MiB); region redirects are off
 * by default; checksums are computed only where S3 requires one (DeleteObjects, s3-store.ts).
 */
export interface S3RequestInit {
  /** The object key, or undefined for a request on the bucket itself. */
  key?: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  body?: string;
}

/** An S3 document as the SDK reads one: the root element's content, text nodes flattened. */
export function parseS3Xml(bytes: Uint8Array): Record<string, unknown> {
  const text = toUtf8(bytes);
  if (!text.length) return {};
  const parsed = parseXML(text) as Record<string, Record<string, unknown>>;
  const root = parsed[Object.keys(parsed)[0]];
  if (typeof root !== 'object' || root === null) return { '#text': root };
  if (root['#text']) {
    root[Object.keys(parsed)[0]] = root['#text'];
    delete root['#text'];
  }
  return getValueFromTextNode(root);
}

/**
 * S3's error answer as the SDK turns it into an error: its Code, else NotFound for a bodiless 404, else Unknown. A
 * body that is not XML (a proxy's page) fails to parse, and that parse error is what the SDK throws, with the
 * response's metadata.
 */
export function s3Error(response: HttpResponse, body: Uint8Array): ServiceError {
  let data: Record<string, unknown>;
  try {
    data = parseS3Xml(body);
  } catch (err) {
    const meta = errorMetadata(response);
    return Object.assign(err as Error, { $metadata: meta.$metadata }) as ServiceError;
  }
  const fields = (typeof data.Error === 'object' && data.Error !== null ? data.Error : data) as Record<
    string,
    unknown
  >;
  const code =
    typeof fields.Code === 'string' ? fields.Code : response.statusCode === 404 ? 'NotFound' : 'Unknown';
  const message = String(fields.Message ?? fields.message ?? 'UnknownError');
  const meta = errorMetadata(response);
  if (!meta.$metadata.requestId && typeof fields.RequestId === 'string')
    meta.$metadata.requestId = fields.RequestId;
  return Object.assign(new Error(message), fields, meta, { name: code, message });
}

/** A bucket's requests: addressing from the service settings, signing and retries from AwsHttp. */
export class S3Http {
  constructor(
    readonly http: AwsHttp,
    private readonly forcePathStyle: boolean,
  ) {}

  async request(method: string, bucket: string, init: S3RequestInit = {}): Promise<HttpRequest> {
    const address = s3Address(await this.http.settings(), bucket, this.forcePathStyle);
    // The key as the SDK's greedy label {Key+}: each segment percent-encoded, the slashes kept.
    const keyPath =
      init.key === undefined ? '' : init.key.split('/').map(extendedEncodeURIComponent).join('/');
    return new HttpRequest({
      method,
      protocol: address.protocol,
      hostname: address.hostname,
      port: address.port,
      path: `${address.base}/${keyPath}`,
      query: { ...init.query },
      headers: { ...init.headers },
      body: init.body,
    });
  }

  presign(request: HttpRequest, opts: { expiresIn: number; signingDate?: Date }): Promise<string> {
    return this.http.presign(request, opts);
  }

  /** Sends a request; a 2xx answer comes back with its body unread (a stream). */
  send(method: string, bucket: string, init: S3RequestInit = {}): Promise<HttpResponse> {
    return this.http.send(() => this.request(method, bucket, init), s3Error);
  }

  /**
   * Sends a request whose answer is an XML document and returns it parsed. With `errorIn200`, a 200 that carries an
   * <Error> (or nothing) is an error, as S3 documents for CompleteMultipartUpload and the SDK handles.
   */
  async sendXml(
    method: string,
    bucket: string,
    init: S3RequestInit = {},
    opts: { errorIn200?: boolean } = {},
  ): Promise<Record<string, unknown>> {
    const response = await this.http.send(
      () => this.request(method, bucket, init),
      s3Error,
      opts.errorIn200 ? s3ErrorIn200 : () => undefined,
    );
    return parseS3Xml(response.body as Uint8Array);
  }
}

/** The SDK's throw200Exceptions: an empty or <Error> body on a 200 is S3 failing late, a retryable 503. */
function s3ErrorIn200(response: HttpResponse, body: Uint8Array): ServiceError | undefined {
  if (body.length === 0)
    return Object.assign(new Error('S3 aborted request'), errorMetadata(response), {
      name: 'InternalError',
      $fault: 'server' as const,
      $metadata: { ...errorMetadata(response).$metadata, httpStatusCode: 503 },
    });
  if (!toUtf8(body.subarray(body.length - 16)).endsWith('</Error>')) return undefined;
  response.statusCode = 503;
  return s3Error(response, body);
}

/** An XML request body as the SDK writes it. */
export function xmlBody(node: XmlNode): string {
  return `<?xml version="1.0" encoding="UTF-8"?>${node.toString()}`;
}

/** `<name>text</name>` */
export const xmlText = (name: string, text: string) => new XmlNode(name).c(new XmlText(text));

export { drain };

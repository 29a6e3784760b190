import { partition, recursionDetectionMiddleware } from '@aws-sdk/core/client';
import { AwsSdkSigV4Signer } from '@aws-sdk/core/httpAuthSchemes';
import { formatUrl } from '@aws-sdk/core/util';
import { doesIdentityRequireRefresh, isIdentityExpired, memoizeIdentityProvider } from '@smithy/core';
import {
  booleanSelector,
  CONFIG_PREFIX_SEPARATOR,
  loadConfig,
  NODE_REGION_CONFIG_FILE_OPTIONS,
  NODE_REGION_CONFIG_OPTIONS,
  NODE_USE_DUALSTACK_ENDPOINT_CONFIG_OPTIONS,
  NODE_USE_FIPS_ENDPOINT_CONFIG_OPTIONS,
  resolveRegionConfig,
  SelectorType,
} from '@smithy/core/config';
import { collectBody, HttpRequest, type HttpResponse } from '@smithy/core/protocols';
import {
  getRetryAfterHint,
  isServerError,
  isThrottlingError,
  isTransientError,
  NODE_MAX_ATTEMPT_CONFIG_OPTIONS,
  NODE_RETRY_MODE_CONFIG_OPTIONS,
  resolveRetryConfig,
} from '@smithy/core/retry';
import { calculateBodyLength, Hash, streamCollector } from '@smithy/core/serde';
import { SignatureV4 } from '@smithy/signature-v4';
import type {
  AwsCredentialIdentity,
  AwsCredentialIdentityProvider,
  RetryErrorInfo,
  RetryErrorType,
  RetryStrategyV2,
  SdkError,
} from '@smithy/types';
import { defaultProvider } from './lambda-credentials.js';

/**
 * Signed requests to an AWS service without its SDK client, for calls that need no more than a signature: S3
 * presigned URLs and object requests, Lambda's asynchronous Invoke, and DynamoDB for the one function whose bundle
 * cannot carry the SDK's DynamoDB client (FilesGraphql). A generated SDK client carries its whole service model (S3's
 * is about 130 KB minified, Lambda's 70 KB), and a function bundle must stay under 400 KB (docs/architecture.md,
 * "Bundle size").
 *
 * Every moving part is the SDK's own, from the packages the SDK clients use: the SigV4 signer (@smithy/signature-v4,
 * driven by the SDK's AwsSdkSigV4Signer, so clock-skew correction is the SDK's), a function's credential chain
 * (functions/adapters/lambda-credentials.ts, which the bundles give every SDK client too), the region, FIPS,
 * dual-stack and endpoint settings read by the SDK's own config loaders (env and shared config files: AWS_REGION,
 * AWS_ENDPOINT_URL_<SERVICE>, AWS_ENDPOINT_URL, AWS_IGNORE_CONFIGURED_ENDPOINT_URLS, AWS_USE_FIPS_ENDPOINT,
 * AWS_USE_DUALSTACK_ENDPOINT), the standard retry strategy and its error classification (AWS_MAX_ATTEMPTS,
 * AWS_RETRY_MODE), the recursion-detection trace header and the Node HTTP handler. What is ours is how each request
 * is laid out, and test/unit/adapters/aws-signing.test.ts and dynamodb-signing.test.ts prove it byte for byte against
 * the SDK clients.
 */

/** The SDK's HTTP handler interface (NodeHttpHandler in functions; a recorder in unit tests). */
export interface RequestHandler {
  handle(request: HttpRequest): Promise<{ response: HttpResponse }>;
}

export interface AwsService {
  /** The SDK's service id, which names its endpoint setting: AWS_ENDPOINT_URL_<ID> (S3, LAMBDA). */
  id: string;
  /** SigV4 signing name. */
  signingName: string;
  /** SigV4 encodes the path a second time for every service except S3, which signs it as sent. */
  uriEscapePath: boolean;
  /** The SDK client's own retry defaults, where they differ from 3 attempts (DynamoDB: 4, from 25 ms). */
  retry?: { maxAttempts: number; baseDelay: number };
}

/** The services reached this way. */
export const S3_SERVICE: AwsService = { id: 'S3', signingName: 's3', uriEscapePath: false };
export const LAMBDA_SERVICE: AwsService = { id: 'Lambda', signingName: 'lambda', uriEscapePath: true };
export const SNS_SERVICE: AwsService = { id: 'SNS', signingName: 'sns', uriEscapePath: true };
export const EVENTBRIDGE_SERVICE: AwsService = {
  id: 'EventBridge',
  signingName: 'events',
  uriEscapePath: true,
};
export const DYNAMODB_SERVICE: AwsService = {
  id: 'DynamoDB',
  signingName: 'dynamodb',
  uriEscapePath: true,
  retry: { maxAttempts: 4, baseDelay: 25 },
};

export interface AwsHttpOptions {
  region?: string;
  credentials?: AwsCredentialIdentity | AwsCredentialIdentityProvider;
  /** An explicit endpoint URL; by default the SDK's endpoint settings apply (above). */
  endpoint?: string;
  useFipsEndpoint?: boolean;
  useDualstackEndpoint?: boolean;
  requestHandler: RequestHandler;
}

/** Where requests go, resolved once per container like an SDK client's configuration. */
export interface ServiceSettings {
  region: string;
  /** The configured endpoint (custom or local), or undefined for the service's public endpoint. */
  endpoint?: URL;
  useFipsEndpoint: boolean;
  useDualstackEndpoint: boolean;
}

/** A POST to `path` on the endpoint's host, built as the SDK builds its requests (no query, a port only when set). */
export function postRequest(
  url: URL,
  path: string,
  headers: Record<string, string>,
  body: unknown,
): HttpRequest {
  return new HttpRequest({
    method: 'POST',
    protocol: url.protocol,
    hostname: url.hostname,
    port: url.port ? Number(url.port) : undefined,
    path,
    query: {},
    headers,
    body,
  });
}

/** Where the SDK posts for services whose operations have no path of their own: the endpoint's path, with a slash. */
export const endpointPath = (url: URL) => (url.pathname.endsWith('/') ? url.pathname : `${url.pathname}/`);

/**
 * The configured endpoint, which the SDK's rulesets refuse together with FIPS or dual-stack (they name a host of
 * their own); undefined when none is configured.
 */
export function customEndpoint(settings: ServiceSettings): URL | undefined {
  const { endpoint, useFipsEndpoint, useDualstackEndpoint } = settings;
  if (!endpoint) return undefined;
  if (useFipsEndpoint) throw new Error('Invalid Configuration: FIPS and custom endpoint are not supported');
  if (useDualstackEndpoint)
    throw new Error('Invalid Configuration: Dualstack and custom endpoint are not supported');
  return endpoint;
}

/**
 * The region's partition and DNS suffix, refused (as the SDK's Lambda and DynamoDB rulesets do) when the settings ask
 * for FIPS or dual-stack and the partition has none.
 */
export function supportedPartition(settings: ServiceSettings): {
  p: ReturnType<typeof partition>;
  suffix: string;
} {
  const { region, useFipsEndpoint, useDualstackEndpoint } = settings;
  const p = partition(region);
  if (useFipsEndpoint && !p.supportsFIPS)
    throw new Error('FIPS is enabled but this partition does not support FIPS');
  if (useDualstackEndpoint && !p.supportsDualStack)
    throw new Error('DualStack is enabled but this partition does not support DualStack');
  return { p, suffix: useDualstackEndpoint ? p.dualStackDnsSuffix : p.dnsSuffix };
}

/** An error as the SDK shapes it: `name` is the service's error code, `$metadata.httpStatusCode` its status. */
export type ServiceError = Error & {
  $fault: 'client' | 'server';
  $metadata: {
    httpStatusCode?: number;
    requestId?: string;
    extendedRequestId?: string;
    cfId?: string;
    attempts?: number;
    totalRetryDelay?: number;
    clockSkewCorrected?: true;
  };
  $response?: HttpResponse;
};

/** Turns a non-2xx response (its body already read) into the service's error. */
export type ErrorParser = (response: HttpResponse, body: Uint8Array) => ServiceError | Promise<ServiceError>;

/** Looks at a 2xx answer's body and returns an error when the service reported one there after all. */
export type SuccessCheck = (response: HttpResponse, body: Uint8Array) => ServiceError | undefined;

/**
 * The endpoint the SDK would take from its configuration for a service: AWS_ENDPOINT_URL_<SERVICE ID>, then
 * AWS_ENDPOINT_URL, then the shared config file's `endpoint_url` (services section first), unless
 * AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is set. Mirrors @smithy/core's getEndpointFromConfig, which is not exported.
 */
export async function configuredEndpoint(serviceId: string): Promise<string | undefined> {
  const ignore = await loadConfig<boolean>({
    environmentVariableSelector: (env) =>
      booleanSelector(env, 'AWS_IGNORE_CONFIGURED_ENDPOINT_URLS', SelectorType.ENV),
    configFileSelector: (profile) =>
      booleanSelector(profile, 'ignore_configured_endpoint_urls', SelectorType.CONFIG),
    default: false,
  })();
  if (ignore) return undefined;
  const words = serviceId.split(' ');
  return loadConfig<string | undefined>({
    environmentVariableSelector: (env) =>
      env[['AWS_ENDPOINT_URL', ...words.map((w) => w.toUpperCase())].join('_')] ||
      env.AWS_ENDPOINT_URL ||
      undefined,
    configFileSelector: (profile, config) => {
      if (profile.services) {
        const section = config?.[['services', profile.services].join(CONFIG_PREFIX_SEPARATOR)];
        if (!section)
          throw new Error(
            `The services section "${profile.services}" specified in the profile is not present in the shared configuration file.`,
          );
        const url =
          section[
            [words.map((w) => w.toLowerCase()).join('_'), 'endpoint_url'].join(CONFIG_PREFIX_SEPARATOR)
          ];
        if (url) return url;
      }
      return profile.endpoint_url || undefined;
    },
    default: undefined,
  })();
}

/** The retry error types of the SDK's retry middleware, from the same classification. */
function retryErrorType(err: SdkError): RetryErrorType {
  if (isThrottlingError(err)) return 'THROTTLING';
  if (isTransientError(err)) return 'TRANSIENT';
  if (isServerError(err)) return 'SERVER_ERROR';
  return 'CLIENT_ERROR';
}

const sigV4 = new AwsSdkSigV4Signer();
const EMPTY = new Uint8Array();

export class AwsHttp {
  private readonly signer: SignatureV4;
  private readonly credentials: AwsCredentialIdentityProvider;
  private readonly region: () => Promise<string>;
  /** What AwsSdkSigV4Signer reads and updates: the signer and the clock offset learnt from responses. */
  private readonly signingConfig: { signer: () => Promise<SignatureV4>; systemClockOffset: number };
  private readonly retry: ReturnType<typeof resolveRetryConfig<object>>;
  private settingsOnce?: Promise<ServiceSettings>;

  constructor(
    readonly service: AwsService,
    private readonly options: AwsHttpOptions,
  ) {
    const resolved = resolveRegionConfig({
      region: options.region ?? loadConfig(NODE_REGION_CONFIG_OPTIONS, NODE_REGION_CONFIG_FILE_OPTIONS),
      useFipsEndpoint: options.useFipsEndpoint ?? loadConfig(NODE_USE_FIPS_ENDPOINT_CONFIG_OPTIONS),
    });
    this.region = resolved.region;
    const given = options.credentials;
    // As the SDK does: a static identity as given, any provider (the default chain) cached until it nears expiry.
    this.credentials = memoizeIdentityProvider(
      typeof given === 'function' ? given : given ? async () => given : defaultProvider(),
      isIdentityExpired,
      doesIdentityRequireRefresh,
    ) as AwsCredentialIdentityProvider;
    this.signer = new SignatureV4({
      service: service.signingName,
      region: this.region,
      credentials: this.credentials,
      sha256: Hash.bind(null, 'sha256'),
      uriEscapePath: service.uriEscapePath,
    });
    this.signingConfig = { signer: async () => this.signer, systemClockOffset: 0 };
    const retry = service.retry;
    this.retry = resolveRetryConfig(
      {
        maxAttempts: loadConfig(
          retry
            ? { ...NODE_MAX_ATTEMPT_CONFIG_OPTIONS, default: retry.maxAttempts }
            : NODE_MAX_ATTEMPT_CONFIG_OPTIONS,
        ),
        retryMode: loadConfig(NODE_RETRY_MODE_CONFIG_OPTIONS),
      },
      retry ? { defaultMaxAttempts: retry.maxAttempts, defaultBaseDelay: retry.baseDelay } : undefined,
    );
    this.useFips = resolved.useFipsEndpoint;
  }

  private readonly useFips: () => Promise<boolean>;

  /** The credentials requests are signed with (an account-based endpoint needs their account id). */
  identity(): Promise<AwsCredentialIdentity> {
    return this.credentials();
  }

  /** Region, endpoint and endpoint variants, read once (the SDK reads its configuration once per client, too). */
  settings(): Promise<ServiceSettings> {
    this.settingsOnce ??= (async () => {
      const [region, useFipsEndpoint, useDualstackEndpoint, endpoint] = await Promise.all([
        this.region(),
        this.useFips(),
        this.options.useDualstackEndpoint ?? loadConfig(NODE_USE_DUALSTACK_ENDPOINT_CONFIG_OPTIONS)(),
        this.options.endpoint ?? configuredEndpoint(this.service.id),
      ]);
      return {
        region,
        useFipsEndpoint: Boolean(useFipsEndpoint),
        useDualstackEndpoint: Boolean(useDualstackEndpoint),
        endpoint: endpoint ? new URL(endpoint) : undefined,
      };
    })();
    return this.settingsOnce;
  }

  /**
   * A presigned URL for `request`, as @aws-sdk/s3-request-presigner makes it: the payload unsigned, `host` the only
   * signed header, every x-amz-* header moved into the query string.
   */
  async presign(request: HttpRequest, opts: { expiresIn: number; signingDate?: Date }): Promise<string> {
    // Spelt as the presigner spells it: the name is copied into the query string as it is.
    request.headers['X-Amz-Content-Sha256'] = 'UNSIGNED-PAYLOAD';
    request.headers.host = hostOf(request);
    const signer = new SignatureV4({
      service: this.service.signingName,
      region: this.region,
      credentials: this.credentials,
      sha256: Hash.bind(null, 'sha256'),
      uriEscapePath: this.service.uriEscapePath,
      applyChecksum: false,
    });
    const signed = await signer.presign(request, {
      expiresIn: opts.expiresIn,
      signingDate: opts.signingDate,
      unsignableHeaders: new Set(['content-type']),
      unhoistableHeaders: new Set(),
    });
    return formatUrl(signed);
  }

  /**
   * Sends a request with the SDK's standard retries: `build` makes a fresh request for every attempt (signing changes
   * it). A 2xx answer is returned with its body unread (a stream to consume or drop), unless `check` is given: then
   * the body is read (a Uint8Array in `response.body`) and `check` may still call the answer an error. Any other
   * answer is turned into an error by `parseError`. Errors are thrown once the retries are spent or when they are
   * not retryable, classified as the SDK classifies them.
   */
  async send(
    build: () => HttpRequest | Promise<HttpRequest>,
    parseError: ErrorParser,
    check?: SuccessCheck,
  ): Promise<HttpResponse> {
    // Standard and adaptive retries both implement the token interface the SDK's retry middleware drives.
    const strategy = (await this.retry.retryStrategy()) as RetryStrategyV2;
    let token = await strategy.acquireInitialRetryToken('');
    let totalRetryDelay = 0;
    for (let attempts = 1; ; attempts++) {
      try {
        const response = await this.attempt(await build(), parseError, check);
        strategy.recordSuccess(token);
        return response;
      } catch (e) {
        const err = e as ServiceError;
        const info: RetryErrorInfo = { errorType: retryErrorType(err as unknown as SdkError) };
        const hint = getRetryAfterHint(err.$response);
        if (hint) info.retryAfterHint = hint;
        try {
          token = await strategy.refreshRetryTokenForRetry(token, info);
        } catch {
          err.$metadata = { ...err.$metadata, attempts, totalRetryDelay };
          throw err;
        }
        const delay = token.getRetryDelay();
        totalRetryDelay += delay;
        if (delay > 0) await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  private async attempt(
    request: HttpRequest,
    parseError: ErrorParser,
    check?: SuccessCheck,
  ): Promise<HttpResponse> {
    request.headers.host ??= hostOf(request);
    if (request.body != null && request.headers['content-length'] === undefined) {
      const length = calculateBodyLength(request.body);
      if (length != null) request.headers['content-length'] = String(length);
    }
    // X-Amzn-Trace-Id (and traceparent) as every SDK call from a Lambda function carries them.
    await recursionDetectionMiddleware()(async (args) => ({ output: {}, response: args.request }), {})({
      request,
      input: {},
    });
    const signing = {
      config: this.signingConfig,
      context: {},
      signingRegion: await this.region(),
      signingName: this.service.signingName,
    } as unknown as Parameters<AwsSdkSigV4Signer['sign']>[2];
    const signed = await sigV4.sign(request, await this.credentials(), signing);
    const { response } = await this.options.requestHandler.handle(signed as HttpRequest);
    let err: ServiceError | undefined;
    if (response.statusCode >= 200 && response.statusCode < 300) {
      if (!check) {
        sigV4.successHandler(response, signing);
        return response;
      }
      response.body = await drain(response);
      err = check(response, response.body);
      if (!err) {
        sigV4.successHandler(response, signing);
        return response;
      }
    }
    err ??= await parseError(response, await drain(response));
    err.$response = response;
    // Learns the clock offset from the response's Date header and marks a skew it corrected, for the retry.
    sigV4.errorHandler(signing)(err);
    throw err;
  }
}

function hostOf(request: HttpRequest): string {
  return request.port != null ? `${request.hostname}:${request.port}` : request.hostname;
}

/** The error metadata the SDK gives every service error. */
export function errorMetadata(response: HttpResponse): Pick<ServiceError, '$fault' | '$metadata'> {
  const h = response.headers;
  return {
    $fault: response.statusCode < 500 ? 'client' : 'server',
    $metadata: {
      httpStatusCode: response.statusCode,
      requestId: h['x-amzn-requestid'] ?? h['x-amzn-request-id'] ?? h['x-amz-request-id'],
      extendedRequestId: h['x-amz-id-2'],
      cfId: h['x-amz-cf-id'],
    },
  };
}

/** Reads and drops a response body, so its connection goes back to the keep-alive pool. */
export async function drain(response: HttpResponse): Promise<Uint8Array> {
  return response.body ? collectBody(response.body, { streamCollector }) : EMPTY;
}

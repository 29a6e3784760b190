import { Duration, RemovalPolicy, Stack, Token } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  ApiMapping,
  CorsHttpMethod,
  DomainName,
  HttpApi,
  HttpMethod,
  HttpStage,
  LogGroupLogDestination,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpJwtAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { Certificate } from 'aws-cdk-lib/aws-certificatemanager';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { ApiFunction } from './api-manifest.js';
import { API_CORS } from './cors.js';
import { acknowledge } from './nag.js';
import { regionOfArn } from './settings-objects.js';

export interface ManifestHttpApiProps {
  apiName: string;
  description: string;
  /** The manifest (lib/api-manifest.ts) and the function built for each of its entries, by name. */
  manifest: ApiFunction[];
  functions: Record<string, IFunction>;
  logRetention: RetentionDays;
  /** What happens to the access log group when the stack is deleted (default: it is kept). */
  logRemovalPolicy?: RemovalPolicy;
  /** Browser origins allowed by CORS (the dashboard's URL); none: no CORS at all. */
  corsOrigins?: string[];
  /** The token issuer and audiences, the same the functions verify against (lib/auth.ts AuthSettings). */
  auth: { issuer: string; audience: string[] };
  /** Stage-wide throttling: steady requests per second and burst. */
  throttle: { rateLimit: number; burstLimit: number };
  /** A custom domain for the API, with its ACM certificate (in the API's region). */
  domain?: { name: string; certificateArn: string };
}

/**
 * An HTTP API built from a manifest: one `ANY <path>` route per manifest path, integrated with that entry's
 * function (payload format 2.0). Method matching, 404/405 and auth happen in the handler, exactly as in the local
 * server, so paths outside the manifest get API Gateway's own 404.
 *
 * The gateway checks tokens too: routes of `bearerOnly` entries carry a JWT authorizer with the same issuer and
 * audiences as the functions, so a request without a valid bearer token is refused (401) before it costs a Lambda
 * invocation; the other routes (public, or taking developer / signed-URL tokens) stay open and are checked in
 * Lambda only. The $default stage writes JSON access logs and throttles every route.
 */
export class ManifestHttpApi extends Construct {
  readonly api: HttpApi;
  readonly stage: HttpStage;
  /** https://<api id>.execute-api.<region>.amazonaws.com */
  readonly url: string;
  /** The custom domain, when there is one: the DNS record of `domain.name` points at its regionalDomainName. */
  readonly domainName?: DomainName;

  constructor(scope: Construct, id: string, props: ManifestHttpApiProps) {
    super(scope, id);
    this.api = new HttpApi(this, 'Api', {
      apiName: props.apiName,
      description: props.description,
      createDefaultStage: false,
      // The dashboard calls the API from its own origin; lib/cors.ts is shared with the local server.
      ...(props.corsOrigins?.length
        ? {
            corsPreflight: {
              allowOrigins: props.corsOrigins,
              allowMethods: API_CORS.allowMethods.map((m) => CorsHttpMethod[m]),
              allowHeaders: [...API_CORS.allowHeaders],
              exposeHeaders: [...API_CORS.exposeHeaders],
              maxAge: Duration.seconds(API_CORS.maxAgeSeconds),
            },
          }
        : {}),
    });

    const accessLogs = new LogGroup(this, 'AccessLogs', {
      retention: props.logRetention,
      // Kept when the stack is deleted unless the operator asked for everything to go (docs/operations.md, Audit).
      removalPolicy: props.logRemovalPolicy ?? RemovalPolicy.RETAIN,
    });
    this.stage = new HttpStage(this, 'DefaultStage', {
      httpApi: this.api,
      stageName: '$default',
      autoDeploy: true,
      throttle: props.throttle,
      accessLogSettings: {
        destination: new LogGroupLogDestination(accessLogs),
        // HTTP API context variables ($context.resourcePath and friends are REST-only).
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            ip: '$context.identity.sourceIp',
            requestTime: '$context.requestTime',
            method: '$context.httpMethod',
            routeKey: '$context.routeKey',
            path: '$context.path',
            status: '$context.status',
            protocol: '$context.protocol',
            responseLength: '$context.responseLength',
            latency: '$context.responseLatency',
            integrationError: '$context.integrationErrorMessage',
          }),
        ),
      },
    });

    // API Gateway reads the issuer's /.well-known/openid-configuration for its keys, and accepts a token whose
    // `aud` or (Cognito access tokens) `client_id` is one of the audiences.
    const authorizer = new HttpJwtAuthorizer('JwtAuthorizer', props.auth.issuer, {
      jwtAudience: props.auth.audience,
    });
    const seen = new Set<string>();
    for (const entry of props.manifest) {
      const fn = props.functions[entry.name];
      if (!fn) throw new Error(`${id}: no function for manifest entry ${entry.name}`);
      const integration = new HttpLambdaIntegration(`${entry.name}Integration`, fn);
      for (const path of entry.paths) {
        if (seen.has(path)) throw new Error(`${id}: path ${path} is served by two manifest entries`);
        seen.add(path);
        this.api.addRoutes({
          path,
          methods: [HttpMethod.ANY],
          integration,
          authorizer: entry.bearerOnly ? authorizer : undefined,
        });
        // A browser's CORS preflight carries no token, and API Gateway sends an OPTIONS request to an ANY route
        // (and so to its authorizer) when one matches: an explicit, open OPTIONS route keeps preflights of
        // bearer-only paths away from the JWT check. The function answers them before its own auth (http.ts).
        if (entry.bearerOnly && props.corsOrigins?.length)
          this.api.addRoutes({ path, methods: [HttpMethod.OPTIONS], integration });
      }
      // The task-service callbacks of a bearer-only entry: a route of their own method, which API Gateway prefers
      // to the path's ANY route, without the JWT authorizer. A task service's own app client (made at registration)
      // is in no audience list the authorizer could hold; the function verifies its token instead (issuer, keys,
      // expiry, an access token with the task services' scope, functions/shared/auth.ts) and every other token as
      // before. The path's other methods keep the authorizer.
      if (entry.bearerOnly)
        for (const route of entry.serviceClientRoutes ?? [])
          this.api.addRoutes({
            path: route.path,
            methods: [HttpMethod[route.method as keyof typeof HttpMethod]],
            integration,
          });
    }
    acknowledge(
      this.api,
      'AwsSolutions-APIG4',
      'Routes that only take a bearer JWT have a JWT authorizer. The others are open at the gateway by design: ' +
        '/health is public, downloads, signed URLs and DRS also take developer or signed-URL tokens ' +
        '(?token=, Authorization: Token) that only the Lambda can check, and the task-service callbacks ' +
        '(PATCH /tasks/{id}, POST /events) and their reads of tasks (GET /tasks, GET /tasks/{id}) take tokens of ' +
        'per-service app clients that no authorizer audience ' +
        'list can name. Every route is authorized in its Lambda.',
    );
    this.url = this.api.apiEndpoint;
    if (props.domain) {
      const region = Stack.of(this).region;
      if (!Token.isUnresolved(region) && regionOfArn(props.domain.certificateArn) !== region)
        throw new Error(
          `Invalid CDK context: the certificate of ${props.domain.name} is in ${regionOfArn(props.domain.certificateArn)}; ` +
            `an API's regional domain needs one in its own region, ${region}`,
        );
      // A regional endpoint with TLS 1.2 (API Gateway's default policy); the operator's DNS points the name at
      // `regionalDomainName`. The execute-api URL keeps working beside it.
      this.domainName = new DomainName(this, 'Domain', {
        domainName: props.domain.name,
        certificate: Certificate.fromCertificateArn(this, 'Certificate', props.domain.certificateArn),
      });
      new ApiMapping(this, 'DomainMapping', {
        api: this.api,
        domainName: this.domainName,
        stage: this.stage,
      });
    }
  }
}

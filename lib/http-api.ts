import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  CorsHttpMethod,
  HttpApi,
  HttpMethod,
  HttpStage,
  LogGroupLogDestination,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { ApiFunction } from './api-manifest.js';
import { API_CORS } from './cors.js';

export interface ManifestHttpApiProps {
  apiName: string;
  description: string;
  /** The manifest (lib/api-manifest.ts) and the function built for each of its entries, by name. */
  manifest: ApiFunction[];
  functions: Record<string, IFunction>;
  logRetention: RetentionDays;
  /** Browser origins allowed by CORS (the dashboard's URL); none: no CORS at all. */
  corsOrigins?: string[];
}

/**
 * An HTTP API built from a manifest: one `ANY <path>` route per manifest path, integrated with that entry's
 * function (payload format 2.0). Method matching, 404/405 and auth happen in the handler, exactly as in the local
 * server, so paths outside the manifest get API Gateway's own 404. The $default stage writes JSON access logs.
 */
export class ManifestHttpApi extends Construct {
  readonly api: HttpApi;
  readonly stage: HttpStage;
  /** https://<api id>.execute-api.<region>.amazonaws.com */
  readonly url: string;

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
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.stage = new HttpStage(this, 'DefaultStage', {
      httpApi: this.api,
      stageName: '$default',
      autoDeploy: true,
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

    const seen = new Set<string>();
    for (const entry of props.manifest) {
      const fn = props.functions[entry.name];
      if (!fn) throw new Error(`${id}: no function for manifest entry ${entry.name}`);
      const integration = new HttpLambdaIntegration(`${entry.name}Integration`, fn);
      for (const path of entry.paths) {
        if (seen.has(path)) throw new Error(`${id}: path ${path} is served by two manifest entries`);
        seen.add(path);
        this.api.addRoutes({ path, methods: [HttpMethod.ANY], integration });
      }
    }
    Validations.of(this.api).acknowledge({
      id: 'AwsSolutions-APIG4',
      reason:
        'Every route is authorized inside its Lambda: the JWT is verified with aws-jwt-verify (issuer, audience, ' +
        'expiry, roles), identical locally and on AWS (issue 2 §2). Some routes are public by design (/health).',
    });
    this.url = this.api.apiEndpoint;
  }
}

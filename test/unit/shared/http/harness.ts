import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { ANONYMOUS, type Principal, type TokenVerifier } from '#functions/shared/auth.js';
import { UnauthorizedError } from '#functions/shared/errors.js';
import type { httpApp } from '#functions/shared/http/app.js';

/** What the tests of functions/shared/http/ share: a verifier of three made-up tokens and a way to call an app. */

export const user = (roles: string[]): Principal => ({
  ...ANONYMOUS,
  kind: 'user',
  sub: 'u1',
  roles,
  isAdmin: roles.includes('admin'),
  isService: roles.includes('service'),
});

/** `admin`, `service` and `reader` are tokens of users with those roles; any other token is refused. */
export const verifier: TokenVerifier = {
  async verify(token) {
    if (token === 'admin') return user(['admin']);
    if (token === 'service') return user(['service']);
    if (token === 'reader') return user([]);
    throw new UnauthorizedError('Invalid or expired token');
  },
};

export interface CallOptions {
  token?: string;
  body?: string;
  query?: string;
  headers?: Record<string, string>;
}

export interface Answer {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

/** Calls `app` as API Gateway would, for api.example.com over https, in a Lambda invocation `requestId`. */
export function caller(app: ReturnType<typeof httpApp>, requestId = 'req-1') {
  return (method: string, path: string, opts: CallOptions = {}): Promise<Answer> => {
    const event = {
      rawPath: path,
      rawQueryString: opts.query ?? '',
      headers: {
        host: 'api.example.com',
        'x-forwarded-proto': 'https',
        ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
        ...opts.headers,
      },
      requestContext: { http: { method }, domainName: 'api.example.com', requestId: 'r1' },
      body: opts.body,
      isBase64Encoded: false,
    } as unknown as APIGatewayProxyEventV2;
    return app(event, { awsRequestId: requestId } as Context) as Promise<Answer>;
  };
}

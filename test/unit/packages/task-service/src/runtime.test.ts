import { describe, expect, it } from 'vitest';
import { checkNodeVersion, localDefaultsOnAws, MIN_NODE_MAJOR } from '#packages/task-service/src/runtime.js';

/** The kit's checks at start: the Node version, and the local defaults it refuses on AWS. */
describe('checkNodeVersion', () => {
  it('passes this Node and refuses one older than the kit needs, naming both', () => {
    expect(MIN_NODE_MAJOR).toBe(20);
    expect(() => checkNodeVersion()).not.toThrow();
    expect(() => checkNodeVersion('20.0.0')).not.toThrow();
    expect(() => checkNodeVersion('v18.20.4')).toThrow(
      /needs Node.js 20 or later; this process runs Node.js v18.20.4/,
    );
  });
});

describe('localDefaultsOnAws', () => {
  const lambda = { AWS_LAMBDA_FUNCTION_NAME: 'stager' };
  it('finds nothing off AWS, whatever is unset', () => {
    expect(localDefaultsOnAws({}, { server: true })).toEqual([]);
  });

  it('names each setting left to a local default on Lambda', () => {
    const problems = localDefaultsOnAws(
      { ...lambda, TOKEN_URL: 'https://auth.test/oauth2/token' },
      { server: false },
    );
    expect(problems.map((p) => p.split(' ')[0])).toEqual([
      'AUTH_ISSUER',
      'CLIENT_ID',
      'CLIENT_SECRET',
      'TASK_TABLE',
    ]);
    expect(problems[0]).toMatch(/Issuer.*Lambda/);
  });

  it('asks for AUTH_CLIENT_ID at a Cognito issuer, and HOST for a server in a container', () => {
    const cognito = 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc';
    const ecs = {
      ECS_CONTAINER_METADATA_URI_V4: 'http://169.254.170.2/v4',
      AUTH_ISSUER: cognito,
      TASK_TABLE: 't',
    };
    expect(localDefaultsOnAws(ecs, { server: true }).map((p) => p.split(' ')[0])).toEqual([
      'AUTH_CLIENT_ID',
      'HOST',
    ]);
    expect(localDefaultsOnAws({ ...ecs, AUTH_CLIENT_ID: 'c', HOST: '0.0.0.0' }, { server: true })).toEqual(
      [],
    );
  });

  it('takes the client from the secret document when there is one', () => {
    const env = {
      ...lambda,
      AUTH_ISSUER: 'https://auth.test',
      TOKEN_URL: 'https://auth.test/t',
      SECRET_ID: 's',
      TASK_TABLE: 't',
    };
    expect(localDefaultsOnAws(env, { server: false })).toEqual([]);
  });
});

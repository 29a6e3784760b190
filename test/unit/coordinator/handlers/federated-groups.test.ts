import type { PreTokenGenerationV2TriggerEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { handler } from '#functions/coordinator/handlers/federated-groups.js';

/** The pre-token-generation trigger as Cognito calls it (event version 2): the answer Cognito reads is `response`. */
const event = (attributes: Record<string, string>, groups: string[] = []) =>
  ({
    version: '2',
    triggerSource: 'TokenGeneration_HostedAuth',
    region: 'eu-west-1',
    userPoolId: 'eu-west-1_abc',
    userName: 'Organization_alice',
    callerContext: { awsSdkVersion: 'x', clientId: 'drc' },
    request: { userAttributes: attributes, groupConfiguration: { groupsToOverride: groups }, scopes: [] },
    response: { claimsAndScopeOverrideDetails: null },
  }) as unknown as PreTokenGenerationV2TriggerEvent;

describe('the federated groups trigger', () => {
  it('puts the provider’s roles into the token’s groups', async () => {
    const out = await handler(event({ 'custom:roles': '[admin, SD_AAAAAAAA]' }, ['SD_BBBBBBBB']));
    expect(out.response.claimsAndScopeOverrideDetails?.groupOverrideDetails?.groupsToOverride).toEqual([
      'SD_BBBBBBBB',
      'admin',
      'SD_AAAAAAAA',
    ]);
  });

  it('leaves a person of the user pool itself as they are', async () => {
    const out = await handler(event({ email: 'a@example.org' }, ['admin']));
    expect(out.response.claimsAndScopeOverrideDetails).toBeNull();
  });
});

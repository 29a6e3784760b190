import type { PreTokenGenerationV2TriggerEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { AUTH_FUNCTIONS } from '#lib/auth-manifest.js';
import { loadHandler } from '#local/handlers.js';

/**
 * The Cognito trigger of a federated identity provider, run from the bundle that deploys (the integration project's
 * LOCAL_HANDLERS=bundled) as Cognito calls it: the provider's roles become the token's groups. Cognito is not part of
 * the local stack, so nothing else calls this function here.
 */
describe('the federated groups trigger, from its bundle', () => {
  it('adds the roles claim Cognito mapped into custom:roles to the groups of the token', async () => {
    const [trigger] = AUTH_FUNCTIONS;
    const handler = await loadHandler<
      (e: PreTokenGenerationV2TriggerEvent) => Promise<PreTokenGenerationV2TriggerEvent>
    >(trigger.entry);
    const event = {
      version: '2',
      triggerSource: 'TokenGeneration_HostedAuth',
      region: 'eu-west-1',
      userPoolId: 'eu-west-1_abc',
      userName: 'Organization_alice',
      callerContext: { awsSdkVersion: 'x', clientId: 'drc' },
      request: {
        userAttributes: { 'custom:roles': '[admin, SD_AAAAAAAA]' },
        groupConfiguration: { groupsToOverride: ['SD_BBBBBBBB'] },
        scopes: ['openid'],
      },
      response: { claimsAndScopeOverrideDetails: null },
    } as unknown as PreTokenGenerationV2TriggerEvent;
    const out = await handler(event);
    expect(out.response.claimsAndScopeOverrideDetails?.groupOverrideDetails?.groupsToOverride).toEqual([
      'SD_BBBBBBBB',
      'admin',
      'SD_AAAAAAAA',
    ]);
  });
});

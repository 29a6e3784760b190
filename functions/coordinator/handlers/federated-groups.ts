import type { PreTokenGenerationV2TriggerEvent } from 'aws-lambda';
import { FEDERATED_ROLES_ATTRIBUTE, federatedGroups } from '../federated-groups.js';

/**
 * Cognito's pre-token-generation trigger (event version 2), deployed with the `identityProvider` setting only
 * (lib/federation.ts): puts the federated roles into the token's groups. It calls nothing; a person of the user pool
 * who did not come through the provider keeps exactly their groups.
 */
export const handler = async (event: PreTokenGenerationV2TriggerEvent) => {
  const own = event.request.groupConfiguration?.groupsToOverride ?? [];
  const groups = federatedGroups(own, event.request.userAttributes?.[FEDERATED_ROLES_ATTRIBUTE]);
  if (groups.length !== own.length)
    event.response = {
      claimsAndScopeOverrideDetails: {
        ...event.response?.claimsAndScopeOverrideDetails,
        groupOverrideDetails: { groupsToOverride: groups },
      },
    };
  return event;
};

import type { WorkerFunction } from './orchestration-manifest.js';

/**
 * Functions of the Cognito user pool itself (its triggers), deployed with the Auth stack when the setting that needs
 * them is given: `FederatedGroups` with `identityProvider` (lib/federation.ts). They touch no table.
 */
export const AUTH_FUNCTIONS: (WorkerFunction & { onlyWith: 'identityProvider' })[] = [
  {
    name: 'FederatedGroups',
    entry: 'functions/coordinator/handlers/federated-groups.ts',
    tables: {},
    onlyWith: 'identityProvider',
  },
];

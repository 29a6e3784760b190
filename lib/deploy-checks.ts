import { Annotations, type StackProps, Token } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import type { Settings } from './settings.js';

/**
 * What a deployment must decide that no default can decide for it (docs/deploy.md, "Decisions"): where alarms go,
 * and which dataservice the studies come from. A synth for a concrete account is a deploy in the making, so it fails
 * naming the settings to give; a synth without an account (the tests, `npm run synth` without credentials) cannot be
 * deployed as it is, so it only warns.
 */
export interface DeployDecision {
  /** The setting(s) to give, for the message. */
  settings: string;
  message: string;
  /** The part of the app it concerns: where an account-less synth's warning is attached. */
  concerns: 'alarms' | 'studies';
}

export function missingDecisions(s: Settings): DeployDecision[] {
  const missing: DeployDecision[] = [];
  if (s.alarms !== 'none' && !s.alarmEmail && !s.alarmTopicArn)
    missing.push({
      settings: 'alarmEmail or alarmTopicArn',
      concerns: 'alarms',
      message:
        'no alarm destination: set alarmEmail (an e-mail address to subscribe) or alarmTopicArn (an existing SNS ' +
        'topic to notify), or alarms=none to deploy without one',
    });
  if (!s.studiesSource)
    missing.push({
      settings: 'studiesSource',
      concerns: 'studies',
      message:
        'no studiesSource: set it to the base URL of the dataservice whose studies this deployment mirrors ' +
        '(docs/deploy.md, "The dataservice contract")',
    });
  return missing;
}

/** Whether the synth is for a known account (the CLI resolved one, or CDK_DEFAULT_ACCOUNT named it). */
export const isConcreteAccount = (env: StackProps['env']) =>
  typeof env?.account === 'string' && env.account !== '' && !Token.isUnresolved(env.account);

export class MissingDecisionsError extends Error {
  constructor(account: string, missing: DeployDecision[]) {
    super(
      `Cannot synthesize for account ${account}: ${missing.map((m) => m.message).join('; ')}. ` +
        'Give them with -c key=value or in cdk.json (docs/deploy.md, "Decisions").',
    );
    this.name = 'MissingDecisionsError';
  }
}

/** Fails a synth for a concrete account that misses a decision. */
export function requireDecisions(s: Settings, env: StackProps['env']): void {
  const missing = missingDecisions(s);
  if (missing.length && isConcreteAccount(env))
    throw new MissingDecisionsError(env?.account as string, missing);
}

/** On an account-less synth, a warning for each missing decision, on the stack it concerns. */
export function warnDecisions(s: Settings, scopes: Record<DeployDecision['concerns'], IConstruct>): void {
  for (const m of missingDecisions(s))
    Annotations.of(scopes[m.concerns]).addWarningV2(
      `@release-coordinator/decision:${m.settings}`,
      `Deploying needs ${m.settings}: ${m.message}`,
    );
}

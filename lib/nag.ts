import { type App, Aspects, type IAspect, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks, type NagPack, ServerlessChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';

/**
 * cdk-nag on every synth: the AwsSolutions and Serverless rule packs, and the project's acknowledgements of their
 * findings, each with its reason. Only cdk-nag's public API is used: the packs as CDK validation plugins, their
 * `validateScope`, and CDK's own `Validations.acknowledge`.
 *
 * Every acknowledgement goes through this module (test/unit/lib/nag.test.ts refuses any other), for two reasons:
 *  - a finding whose resource varies with the account, the region or the bootstrap qualifier (the CDK asset bucket,
 *    say) is matched by a pattern (`acknowledgeMatching`). cdk-nag 3 compares acknowledgements with finding ids
 *    literally (`AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::cdk-<qualifier>-assets-<account>-<region>/*]`,
 *    so the packs are run on the acknowledging construct just before validation and each finding that matches is
 *    acknowledged by its own id;
 *  - the acknowledgements of an app can be listed and held against the raw findings (`unmatchedAcknowledgements`),
 *    so one that no longer matches anything fails a test instead of lingering.
 */

/** The rule packs every synth runs, as validation plugins. */
export function nagPacks(scope?: IConstruct): NagPack[] {
  return [new AwsSolutionsChecks(scope), new ServerlessChecks(scope)];
}

interface Acknowledgement {
  scope: IConstruct;
  /** A finding id as cdk-nag names it (`AwsSolutions-L1`, `AwsSolutions-IAM5[Action::s3:List*]`)... */
  id?: string;
  /** ...or a rule (`AwsSolutions-IAM5`) and a pattern its findings (the part in brackets) must match. */
  rule?: string;
  finding?: RegExp;
  reason: string;
}

interface AppAcknowledgements {
  /** Record only: nothing is acknowledged, so every finding stays visible (unmatchedAcknowledgements). */
  recordOnly: boolean;
  list: Acknowledgement[];
}

const registry = new WeakMap<IConstruct, AppAcknowledgements>();

function acknowledgementsOf(scope: IConstruct): AppAcknowledgements {
  const root = scope.node.root;
  let entry = registry.get(root);
  if (!entry) {
    entry = { recordOnly: false, list: [] };
    registry.set(root, entry);
  }
  return entry;
}

/** Acknowledges one finding on `scope` and everything under it, by its exact id. */
export function acknowledge(scope: IConstruct, id: string, reason: string): void {
  const acks = acknowledgementsOf(scope);
  acks.list.push({ scope, id, reason });
  if (!acks.recordOnly) Validations.of(scope).acknowledge({ id, reason });
}

/**
 * Acknowledges every finding of `rule` on `scope` (and under it) whose finding text matches `finding`, e.g.
 * `acknowledgeMatching(handler, 'AwsSolutions-IAM5', /^Resource::arn:<AWS::Partition>:s3:::cdk-[a-z0-9]+-assets-/,
 * '...')`. Patterns are for resources that vary from one deployment to the next; anchor them.
 */
export function acknowledgeMatching(scope: IConstruct, rule: string, finding: RegExp, reason: string): void {
  acknowledgementsOf(scope).list.push({ scope, rule, finding, reason });
}

/** The text in brackets of a finding id (`Resource::*` of `AwsSolutions-IAM5[Resource::*]`), if it has one. */
function findingOf(ruleName: string, rule: string): string | undefined {
  const prefix = `${rule}[`;
  return ruleName.startsWith(prefix) && ruleName.endsWith(']')
    ? ruleName.slice(prefix.length, -1)
    : undefined;
}

const under = (path: string, scope: IConstruct) => {
  const root = scope.node.path;
  return root === '' || path === root || path.startsWith(`${root}/`);
};

/** Every finding of the packs under `scope`: its id and the paths of the resources it names. */
function findings(scope: IConstruct): { id: string; paths: string[] }[] {
  return nagPacks().flatMap((pack) =>
    pack.validateScope(scope).violations.map((v) => ({
      id: v.ruleName,
      paths: v.violatingResources.flatMap((r) => (r.constructPath ? [r.constructPath] : [])),
    })),
  );
}

/** Turns each pattern acknowledgement into acknowledgements of the findings it matches, before validation runs. */
class PatternAcknowledgements implements IAspect {
  constructor(private readonly app: App) {}
  visit(node: IConstruct): void {
    if (node !== this.app) return;
    const acks = acknowledgementsOf(this.app);
    if (acks.recordOnly) return;
    for (const ack of acks.list) {
      if (!ack.rule || !ack.finding) continue;
      for (const f of findings(ack.scope)) {
        const text = findingOf(f.id, ack.rule);
        if (text !== undefined && ack.finding.test(text) && f.paths.some((p) => under(p, ack.scope)))
          Validations.of(ack.scope).acknowledge({ id: f.id, reason: ack.reason });
      }
    }
  }
}

/** Runs the packs on every synth of `app`, with the acknowledgements made through this module. */
export function addNagChecks(app: App): void {
  Validations.of(app).addPlugins(...nagPacks(app));
  Aspects.of(app).add(new PatternAcknowledgements(app));
}

/**
 * For tests: makes the acknowledgements of `app` recorded only, so its findings all stay visible. Call it before
 * anything is acknowledged (before buildApp).
 */
export function recordAcknowledgementsOnly(app: App): void {
  acknowledgementsOf(app).recordOnly = true;
}

/**
 * For tests, on an app whose acknowledgements were only recorded (and which was synthesized, so its aspects ran):
 * the acknowledgements that match no finding of the packs on their construct, as `<path>: <id or rule /pattern/>`.
 */
export function unmatchedAcknowledgements(app: App): string[] {
  const acks = acknowledgementsOf(app);
  if (!acks.recordOnly)
    throw new Error('unmatchedAcknowledgements needs recordAcknowledgementsOnly(app) first');
  const all = findings(app);
  return acks.list
    .filter(
      (ack) =>
        !all.some((f) => {
          const matches = ack.id
            ? f.id === ack.id
            : ack.rule && ack.finding
              ? (() => {
                  const text = findingOf(f.id, ack.rule);
                  return text !== undefined && ack.finding.test(text);
                })()
              : false;
          return matches && f.paths.some((p) => under(p, ack.scope));
        }),
    )
    .map((ack) => `${ack.scope.node.path}: ${ack.id ?? `${ack.rule} ${ack.finding}`}`);
}

/** For tests: every acknowledgement made on `app`, as `<path>: <id or rule /pattern/>: <reason>`. */
export function acknowledgementsOfApp(app: App): string[] {
  return acknowledgementsOf(app).list.map(
    (ack) => `${ack.scope.node.path}: ${ack.id ?? `${ack.rule} ${ack.finding}`}: ${ack.reason}`,
  );
}

/** `text` as a regular expression that matches it literally. */
export const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

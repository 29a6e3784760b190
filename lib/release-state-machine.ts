import { join } from 'node:path';
import { ArnFormat, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { DefinitionBody, LogLevel, StateMachine, StateMachineType } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct, type IConstruct } from 'constructs';
import { acknowledge, acknowledgeMatching, escapeRegExp } from './nag.js';
import { REPO_ROOT } from './service-function.js';

export const RELEASE_ASL_FILE = join(REPO_ROOT, 'statemachines', 'release.asl.json');

export interface ReleaseStateMachineProps {
  /** Physical name; fixed so that functions can be given the ARN without a reference cycle (see below). */
  stateMachineName: string;
  /** DefinitionSubstitutions key (e.g. ReleaseStepFunctionArn) -> the function the ASL calls under that key. */
  tasks: Record<string, IFunction>;
  logRetention: RetentionDays;
  /** What happens to the log group when the stack is deleted (default: it is kept). */
  logRemovalPolicy?: RemovalPolicy;
  /** Log execution data (state inputs and outputs, task tokens among them). Off unless asked for. */
  logExecutionData?: boolean;
  definitionFile?: string;
}

/** What an orchestration client may do with executions of this machine: start, look up, and answer callbacks. */
export const ORCHESTRATION_ACTIONS = {
  stateMachine: ['states:StartExecution', 'states:SendTaskSuccess', 'states:SendTaskFailure'],
  execution: ['states:DescribeExecution'],
} as const;

/**
 * The release state machine: statemachines/release.asl.json loaded as is (DefinitionBody.fromFile) with one
 * DefinitionSubstitution per worker function, standard type, logging of every event (execution data only when
 * asked for) and X-Ray. Its role may invoke exactly
 * the substituted functions. Nothing here depends on the machine's inner states.
 *
 * The ASL references the worker functions, and some of those functions (PollWait) must in turn call
 * SendTaskSuccess on this machine. Referencing `stateMachineArn` from them would be a CloudFormation cycle, so the
 * machine has a fixed name and `arn` is computed from it.
 */
export class ReleaseStateMachine extends Construct {
  readonly stateMachine: StateMachine;
  /** ARN computed from the fixed name: safe to hand to functions the machine itself invokes. */
  readonly arn: string;
  readonly executionArnPattern: string;
  /** The machine's fixed name. */
  readonly name: string;

  /** The ARN a machine of this name will have in the scope's stack (no reference to the resource). */
  static arnFor(scope: Construct, stateMachineName: string): string {
    return Stack.of(scope).formatArn({
      service: 'states',
      resource: 'stateMachine',
      resourceName: stateMachineName,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
  }

  constructor(scope: Construct, id: string, props: ReleaseStateMachineProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const name = props.stateMachineName;
    this.name = name;
    this.arn = ReleaseStateMachine.arnFor(this, name);
    this.executionArnPattern = stack.formatArn({
      service: 'states',
      resource: 'execution',
      resourceName: `${name}:*`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });

    const logGroup = new LogGroup(this, 'Logs', {
      // The vendedlogs prefix keeps Step Functions' log-delivery resource policy from growing per machine.
      logGroupName: `/aws/vendedlogs/states/${name}`,
      retention: props.logRetention,
      // Kept when the stack is deleted unless the operator asked for everything to go (docs/operations.md, Audit).
      // Its name is fixed, so a stack deployed again under the same prefix needs it deleted first (docs/deploy.md).
      removalPolicy: props.logRemovalPolicy ?? RemovalPolicy.RETAIN,
    });

    const substitutions: Record<string, string> = {};
    for (const [key, fn] of Object.entries(props.tasks)) substitutions[key] = fn.functionArn;

    this.stateMachine = new StateMachine(this, 'StateMachine', {
      stateMachineName: name,
      stateMachineType: StateMachineType.STANDARD,
      definitionBody: DefinitionBody.fromFile(props.definitionFile ?? RELEASE_ASL_FILE),
      definitionSubstitutions: substitutions,
      // Every event is logged, but without execution data unless asked for: the data holds task tokens.
      logs: {
        destination: logGroup,
        level: LogLevel.ALL,
        includeExecutionData: props.logExecutionData ?? false,
      },
      tracingEnabled: true,
    });
    // Unqualified ARNs only: the ASL calls $LATEST, so no ":*" version wildcard is granted.
    this.stateMachine.addToRolePolicy(
      new PolicyStatement({
        sid: 'InvokeReleaseTasks',
        actions: ['lambda:InvokeFunction'],
        resources: Object.values(props.tasks).map((fn) => fn.functionArn),
      }),
    );
    acknowledge(
      this.stateMachine.role,
      'AwsSolutions-IAM5[Resource::*]',
      'Added by CDK for execution logging (logs:CreateLogDelivery, ...) and X-Ray (xray:PutTraceSegments, ...); ' +
        'these actions support no resource-level permissions.',
    );
  }

  /** StartExecution and the task-token callbacks on this machine only; DescribeExecution on its executions only. */
  grantOrchestration(grantee: IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        sid: 'ReleaseStateMachine',
        actions: [...ORCHESTRATION_ACTIONS.stateMachine],
        resources: [this.arn],
      }),
    );
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        sid: 'ReleaseExecutions',
        actions: [...ORCHESTRATION_ACTIONS.execution],
        resources: [this.executionArnPattern],
      }),
    );
    // Region and account are the stack's: literal with a concrete env, pseudo parameters without one.
    acknowledgeMatching(
      grantee.grantPrincipal as unknown as IConstruct,
      'AwsSolutions-IAM5',
      new RegExp(
        `^Resource::arn:<AWS::Partition>:states:(<AWS::Region>|[a-z0-9-]+):(<AWS::AccountId>|\\d{12}):execution:${escapeRegExp(this.name)}:\\*$`,
      ),
      'Execution names are release ids chosen at run time; the pattern covers executions of this one machine.',
    );
  }
}

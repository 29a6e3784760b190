import { type StackProps, Stage } from 'aws-cdk-lib';
import { Match } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { type ApiFunction, COORDINATOR_API, FILES_API } from '#lib/api-manifest.js';
import { CAPABILITIES } from '#lib/capabilities.js';
import { FILES_WORKERS, WORKER_FUNCTIONS } from '#lib/orchestration-manifest.js';
import type { TableKey } from '#lib/table-definitions.js';
import { resolveCfn } from '#test/helpers/asl.js';
import {
  actionsOf,
  collectImports,
  ENVS,
  EXTERNAL_IDP,
  logicalId,
  type Statement,
  type Synth,
  statementsOfRole,
  synth as synthApp,
  tableOfExport,
  WRITE_ACTIONS,
} from './app-fixture.js';

/**
 * CDK assertions on the whole app (lib/app.ts), least privilege: what each function's role may do (tables, the state
 * machine, the coordinator's client secret, Cognito app clients, events, the files bucket) is what its manifest entry
 * and capabilities name, and nothing more (app-fixture.ts says how the app is synthesized).
 *
 * @covers lib/app.ts
 */
let env: StackProps['env'];
let base: Synth;
/** The app in the env being run, with `context` on top of the defaults. */
const synth = (context: Record<string, unknown> = {}) => synthApp(env, context);

describe.each(ENVS)('the app, %s', (_, suiteEnv) => {
  // A whole-app synth with cdk-nag: seconds on a quiet machine, several times that on a busy one.
  beforeAll(() => {
    env = suiteEnv;
    base = synth();
  }, 120_000);

  describe('least privilege', () => {
    const entries: (ApiFunction | (typeof WORKER_FUNCTIONS)[number])[] = [
      ...COORDINATOR_API,
      ...WORKER_FUNCTIONS,
    ];

    it('grants each function exactly the tables its manifest entry names, read-only for "r"', () => {
      const tableOf = tableOfExport(base);
      for (const entry of entries) {
        const fn = base.built.coordinator.functions[entry.name];
        const statements = statementsOfRole(base.coordinator, logicalId(fn.role));
        const granted = new Map<TableKey, Set<string>>();
        // The gate's own records grant and everyone else's Deny of them: the next test.
        const tableGrants = statements.filter(
          (s) => s.Effect === 'Allow' && !s.Condition && actionsOf(s).some((a) => a.startsWith('dynamodb:')),
        );
        for (const s of tableGrants) {
          for (const exp of collectImports(s.Resource)) {
            const key = tableOf(exp);
            expect(key, `${entry.name}: ${exp}`).toBeDefined();
            const set = granted.get(key!) ?? new Set();
            for (const a of actionsOf(s)) set.add(a);
            granted.set(key!, set);
          }
        }
        expect([...granted.keys()].sort(), entry.name).toEqual(Object.keys(entry.tables).sort());
        for (const [key, access] of Object.entries(entry.tables)) {
          const actions = [...granted.get(key as TableKey)!];
          expect(actions).toContain('dynamodb:Query');
          if (access === 'rw') expect(actions).toEqual(expect.arrayContaining(WRITE_ACTIONS));
          else
            expect(
              actions.filter((a) => WRITE_ACTIONS.includes(a)),
              `${entry.name} ${key}`,
            ).toEqual([]);
        }
        // No wildcard actions anywhere in a function's policy.
        for (const s of statements)
          expect(
            actionsOf(s).some((a) => a.includes('*')),
            entry.name,
          ).toBe(false);
      }
    });

    it('only the orchestration clients may use the state machine, and only this one machine', () => {
      const machine = base.built.coordinator.stateMachine;
      const name =
        base.coordinator.toJSON().Resources[logicalId(machine.stateMachine)].Properties.StateMachineName;
      for (const entry of entries) {
        const fn = base.built.coordinator.functions[entry.name];
        const sfn = statementsOfRole(base.coordinator, logicalId(fn.role)).filter((s) =>
          actionsOf(s).some((a) => a.startsWith('states:')),
        );
        if (!CAPABILITIES[entry.name]?.orchestration) {
          expect(sfn, entry.name).toEqual([]);
          continue;
        }
        const byResource = Object.fromEntries(sfn.map((s) => [resolveCfn(s.Resource), actionsOf(s).sort()]));
        // resolveCfn renders the pseudo parameters of an env-agnostic app as us-east-1.
        const region = env?.region ?? 'us-east-1';
        expect(byResource, entry.name).toEqual({
          [`arn:aws:states:${region}:123456789012:stateMachine:${name}`]: [
            'states:SendTaskFailure',
            'states:SendTaskSuccess',
            'states:StartExecution',
          ],
          [`arn:aws:states:${region}:123456789012:execution:${name}:*`]: ['states:DescribeExecution'],
        });
      }
      // The brief's named callers are among them.
      for (const name of ['PollWait', 'Tasks', 'Releases', 'TaskServices'])
        expect(CAPABILITIES[name]?.orchestration).toBe(true);
    });

    it('only the task-service callers may read the coordinator client secret', () => {
      const secretId = logicalId(base.built.auth!.auth.coordinatorClientSecret);
      for (const entry of entries) {
        const fn = base.built.coordinator.functions[entry.name];
        const reads = statementsOfRole(base.coordinator, logicalId(fn.role)).filter((s) =>
          actionsOf(s).includes('secretsmanager:GetSecretValue'),
        );
        if (CAPABILITIES[entry.name]?.coordinatorToken) {
          expect(reads, entry.name).toHaveLength(1);
          expect(collectImports(reads[0].Resource)[0]).toContain(`Ref${secretId}`);
        } else expect(reads, entry.name).toEqual([]);
      }
    });

    it('only the service-client gate may create and delete Cognito app clients and replace their secrets, of this user pool alone: no other role of any stack', () => {
      const poolId = logicalId(base.built.auth!.auth.userPool);
      const clientActions = [
        'cognito-idp:CreateUserPoolClient',
        'cognito-idp:DeleteUserPoolClient',
        'cognito-idp:AddUserPoolClientSecret',
        'cognito-idp:DeleteUserPoolClientSecret',
      ];
      const gateRole = logicalId(base.built.coordinator.functions.ServiceClientGate.role);
      // Every policy of every stack of the app, whoever it is attached to.
      const holders: string[] = [];
      // The app's cloud assembly (synthesized once already; Stage.synth answers it again).
      const assembly = Stage.of(base.built.coordinator)!.synth();
      expect(assembly.stacks.length).toBeGreaterThanOrEqual(6);
      for (const stack of assembly.stacks)
        for (const [id, resource] of Object.entries(stack.template.Resources as Record<string, any>)) {
          if (resource.Type !== 'AWS::IAM::Policy' && resource.Type !== 'AWS::IAM::ManagedPolicy') continue;
          for (const st of resource.Properties.PolicyDocument.Statement as Statement[])
            if (actionsOf(st).some((a) => clientActions.includes(a) || a.startsWith('cognito-idp:*')))
              holders.push(`${stack.stackName}/${id}:${JSON.stringify(resource.Properties.Roles)}`);
        }
      expect(holders).toHaveLength(1);
      expect(holders[0]).toContain(`${base.built.coordinator.stackName}/`);
      expect(JSON.parse(holders[0].split(':').slice(1).join(':'))).toEqual([{ Ref: gateRole }]);
      const gate = statementsOfRole(base.coordinator, gateRole).filter((st) =>
        actionsOf(st).some((a) => a.startsWith('cognito-idp:')),
      );
      expect(gate).toHaveLength(1);
      // A quarantine (and its release) replaces the secret of a client the gate made.
      expect(actionsOf(gate[0]).sort()).toEqual([
        'cognito-idp:AddUserPoolClientSecret',
        'cognito-idp:CreateUserPoolClient',
        'cognito-idp:DeleteUserPoolClient',
        'cognito-idp:DeleteUserPoolClientSecret',
        'cognito-idp:ListUserPoolClientSecrets',
      ]);
      // The pool's ARN, imported from the auth stack: no wildcard, no other pool.
      expect(collectImports(gate[0].Resource)).toHaveLength(1);
      expect(collectImports(gate[0].Resource)[0]).toContain(poolId);
      // None of the coordinator's functions but the gate has any Cognito action at all.
      for (const entry of entries) {
        if (entry.name === 'ServiceClientGate') continue;
        const fn = base.built.coordinator.functions[entry.name];
        const cognito = statementsOfRole(base.coordinator, logicalId(fn.role)).filter((st) =>
          actionsOf(st).some((a) => a.startsWith('cognito-idp:')),
        );
        expect(cognito, entry.name).toEqual([]);
      }
    });

    it('the TaskServices function alone may invoke the gate, and the gate alone may write its client records', () => {
      const gate = base.built.coordinator.functions.ServiceClientGate;
      for (const entry of entries) {
        const fn = base.built.coordinator.functions[entry.name];
        const statements = statementsOfRole(base.coordinator, logicalId(fn.role));
        const invokes = statements.filter((st) => actionsOf(st).includes('lambda:InvokeFunction'));
        if (entry.name === 'TaskServices') {
          expect(invokes, entry.name).toHaveLength(1);
          expect(invokes[0].Resource).toEqual({ 'Fn::GetAtt': [logicalId(gate.fn), 'Arn'] });
        } else expect(invokes, entry.name).toEqual([]);
        const onRecords = statements.filter((st) => JSON.stringify(st.Condition ?? {}).includes('SCLIENT#*'));
        if (entry.name === 'ServiceClientGate') {
          // Get, put and delete of its own keys, and no other access to the table.
          expect(onRecords).toHaveLength(1);
          expect(onRecords[0]).toMatchObject({
            Effect: 'Allow',
            Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['SCLIENT#*'] } },
          });
          expect(actionsOf(onRecords[0]).sort()).toEqual([
            'dynamodb:DeleteItem',
            'dynamodb:GetItem',
            'dynamodb:PutItem',
          ]);
          expect(
            statements.filter((st) => actionsOf(st).some((a) => a.startsWith('dynamodb:'))),
          ).toHaveLength(1);
        } else if (entry.tables.coordinator === 'rw') {
          // Whoever else writes the table is refused those keys, whatever its grant says.
          expect(onRecords, entry.name).toHaveLength(1);
          expect(onRecords[0]).toMatchObject({
            Effect: 'Deny',
            Condition: { 'ForAnyValue:StringLike': { 'dynamodb:LeadingKeys': ['SCLIENT#*'] } },
          });
          expect(actionsOf(onRecords[0])).toEqual(expect.arrayContaining(WRITE_ACTIONS));
        } else expect(onRecords, entry.name).toEqual([]);
      }
    });

    it('binds every task service to its client on AWS: TASK_SERVICE_CLIENT_REQUIRED=true, clients made by the gate in the pool', () => {
      const envOf = (s: Synth, name: string) =>
        s.coordinator.toJSON().Resources[logicalId(s.built.coordinator.functions[name].fn)].Properties
          .Environment.Variables;
      const env = envOf(base, 'TaskServices');
      expect(env.TASK_SERVICE_CLIENT_REQUIRED).toBe('true');
      expect(env.TASK_SERVICE_CLIENTS_SCOPE).toBe('coordinator/service');
      expect(env.TASK_SERVICE_CLIENTS_FUNCTION_NAME).toEqual({
        Ref: logicalId(base.built.coordinator.functions.ServiceClientGate.fn),
      });
      // The pool is the gate's: the TaskServices function is not told where to make clients.
      expect(env.TASK_SERVICE_CLIENTS_USER_POOL_ID).toBeUndefined();
      expect(collectImports(envOf(base, 'ServiceClientGate').TASK_SERVICE_CLIENTS_USER_POOL_ID)[0]).toContain(
        logicalId(base.built.auth!.auth.userPool),
      );
      // The other functions neither need nor get it.
      expect(envOf(base, 'ReleaseStep').TASK_SERVICE_CLIENTS_USER_POOL_ID).toBeUndefined();
      expect(envOf(base, 'ReleaseStep').TASK_SERVICE_CLIENTS_FUNCTION_NAME).toBeUndefined();
      // An external issuer: still required, no pool to make clients in, no gate to call.
      const oidc = synth(EXTERNAL_IDP);
      expect(envOf(oidc, 'TaskServices').TASK_SERVICE_CLIENT_REQUIRED).toBe('true');
      expect(envOf(oidc, 'TaskServices').TASK_SERVICE_CLIENTS_FUNCTION_NAME).toBeUndefined();
      expect(envOf(oidc, 'ServiceClientGate').TASK_SERVICE_CLIENTS_USER_POOL_ID).toBeUndefined();
      // Context functionEnv can turn it off.
      const off = synth({ functionEnv: { TASK_SERVICE_CLIENT_REQUIRED: 'false' } });
      expect(envOf(off, 'TaskServices').TASK_SERVICE_CLIENT_REQUIRED).toBe('false');
    });

    it('functions that write the coordinator table publish events to the SNS topic; the others cannot', () => {
      const topicId = logicalId(base.built.coordinator.events.topic!);
      for (const entry of entries) {
        const fn = base.built.coordinator.functions[entry.name];
        const env = base.coordinator.toJSON().Resources[logicalId(fn.fn)].Properties.Environment.Variables;
        const publishes = statementsOfRole(base.coordinator, logicalId(fn.role)).filter((s) =>
          actionsOf(s).includes('sns:Publish'),
        );
        if (entry.tables.coordinator === 'rw') {
          expect(env.EVENTS_TOPIC_ARN).toEqual({ Ref: topicId });
          expect(publishes.map((s) => s.Resource)).toEqual([{ Ref: topicId }]);
        } else {
          expect(env.EVENTS_TOPIC_ARN).toBeUndefined();
          expect(publishes).toEqual([]);
        }
      }
      base.coordinator.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: Match.anyValue() });
    });

    it('with eventSink=eventbridge the same functions put events on a bus instead', () => {
      const s = synth({ eventSink: 'eventbridge' });
      expect(s.coordinator.findResources('AWS::SNS::Topic')).toEqual({});
      const busId = logicalId(s.built.coordinator.events.bus!);
      for (const entry of entries) {
        const fn = s.built.coordinator.functions[entry.name];
        const env = s.coordinator.toJSON().Resources[logicalId(fn.fn)].Properties.Environment.Variables;
        const puts = statementsOfRole(s.coordinator, logicalId(fn.role)).filter((st) =>
          actionsOf(st).includes('events:PutEvents'),
        );
        const writes = entry.tables.coordinator === 'rw';
        expect(env.EVENTS_BUS_NAME, entry.name).toEqual(writes ? { Ref: busId } : undefined);
        expect(puts.map((st) => st.Resource)).toEqual(writes ? [{ 'Fn::GetAtt': [busId, 'Arn'] }] : []);
      }
    });

    it('file functions get the tables of their entry and, only where declared, objects of the files bucket', () => {
      expect(FILES_API.length).toBeGreaterThan(0);
      const tableOf = tableOfExport(base);
      const bucketExport = base.built.stateful.filesBucketExportName;
      const expectedS3: Record<string, string[]> = {
        read: ['s3:GetObject'],
        verify: ['s3:DeleteObject', 's3:GetObject'],
        readwrite: ['s3:AbortMultipartUpload', 's3:DeleteObject', 's3:GetObject', 's3:PutObject'],
      };
      for (const entry of [...FILES_API, ...FILES_WORKERS]) {
        const fn = base.built.files.functions[entry.name];
        const statements = statementsOfRole(base.files, logicalId(fn.role));
        const s3 = statements.filter((st) => actionsOf(st).some((a) => a.startsWith('s3:')));
        const level = CAPABILITIES[entry.name]?.filesBucket;
        expect(
          s3.map((st) => [resolveCfn(st.Resource), actionsOf(st).sort()]),
          entry.name,
        ).toEqual(
          level
            ? [
                [`arn:aws:s3:::${bucketExport}/*`, expectedS3[level]],
                [`arn:aws:s3:::${bucketExport}`, ['s3:ListBucket']],
              ]
            : [],
        );
        const tables = new Set(
          statements
            .filter((st) => actionsOf(st).some((a) => a.startsWith('dynamodb:')))
            .flatMap((st) => collectImports(st.Resource).map(tableOf)),
        );
        expect([...tables].sort(), entry.name).toEqual(Object.keys(entry.tables).sort());
        expect(
          statements.some((st) => actionsOf(st).some((a) => /^(states|sns|events|secretsmanager):/.test(a))),
        ).toBe(false);
      }
      expect(FILES_API.some((e) => CAPABILITIES[e.name]?.filesBucket === 'readwrite')).toBe(true);
      // No coordinator function touches the files bucket.
      for (const fn of Object.values(base.built.coordinator.functions)) {
        const statements = statementsOfRole(base.coordinator, logicalId(fn.role));
        expect(statements.some((st) => actionsOf(st).some((a) => a.startsWith('s3:')))).toBe(false);
      }
    });

    it('runs the upload verification worker for 15 minutes, invoked asynchronously by the Files function alone, failures to a queue', () => {
      const worker = base.built.files.functions.VerifyUpload;
      const files = base.built.files.functions.Files;
      const resources = base.files.toJSON().Resources;
      const props = resources[logicalId(worker.fn)].Properties;
      expect(props.Timeout).toBe(900);
      expect(props.MemorySize).toBeGreaterThanOrEqual(1769);
      const queue = logicalId(base.built.files.verificationFailures.queue);
      base.files.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
        FunctionName: { Ref: logicalId(worker.fn) },
        MaximumRetryAttempts: 2,
        MaximumEventAgeInSeconds: 6 * 3600,
        DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [queue, 'Arn'] } } },
      });
      // The worker may send its failed events to that queue (Lambda sends them with the function's role).
      const sends = statementsOfRole(base.files, logicalId(worker.role)).filter((st) =>
        actionsOf(st).includes('sqs:SendMessage'),
      );
      expect(sends.map((st) => st.Resource)).toEqual([{ 'Fn::GetAtt': [queue, 'Arn'] }]);
      base.files.hasResourceProperties('AWS::SQS::Queue', {
        SqsManagedSseEnabled: true,
        MessageRetentionPeriod: 14 * 24 * 3600,
      });
      const filesEnv = resources[logicalId(files.fn)].Properties.Environment.Variables;
      expect(filesEnv.VERIFY_UPLOAD_FUNCTION_NAME).toEqual({ Ref: logicalId(worker.fn) });
      const invokers = Object.entries(base.built.files.functions).filter(([, fn]) =>
        statementsOfRole(base.files, logicalId(fn.role)).some((st) =>
          actionsOf(st).includes('lambda:InvokeFunction'),
        ),
      );
      expect(invokers.map(([name]) => name)).toEqual(['Files']);
    });
  });
});

describe('the app, whatever the env', () => {
  it('every capability names a function of the manifests', () => {
    const names = new Set(
      [...COORDINATOR_API, ...WORKER_FUNCTIONS, ...FILES_API, ...FILES_WORKERS].map((e) => e.name),
    );
    for (const name of Object.keys(CAPABILITIES)) expect(names, name).toContain(name);
  });

  it('resolveCfn renders the intrinsics used above (sanity of the helper)', () => {
    expect(resolveCfn({ 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':s3:::b/*']] })).toBe(
      'arn:aws:s3:::b/*',
    );
  });
});

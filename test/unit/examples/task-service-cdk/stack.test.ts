import { App, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { referenceTaskServiceStack } from '#examples/task-service-cdk/stack.js';

/**
 * The example app of the kit's CDK construct: the reference task service, its Lambda entry bundled by esbuild,
 * passes cdk-nag's packs, and says which context it lacks.
 *
 * @covers examples/task-service-cdk/app.ts
 * @covers examples/task-service-cdk/lambda.ts
 */
const CONTEXT = {
  coordinatorUrl: 'https://abc123.execute-api.eu-west-1.amazonaws.com',
  issuer: 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbCdEf',
  coordinatorClientId: '4k1coordinator',
  tokenUrl: 'https://coordinator.auth.eu-west-1.amazoncognito.com/oauth2/token',
};

describe('the example app (examples/task-service-cdk)', () => {
  it('synthesizes the reference service with its bundled entry, cdk-nag passing', () => {
    const app = new App({ context: CONTEXT });
    Validations.of(app).addPlugins(new AwsSolutionsChecks(), new ServerlessChecks());
    const { stack } = referenceTaskServiceStack(app);
    const assembly = app.synth();
    const template = Template.fromStack(stack);
    const fns = Object.values(template.findResources('AWS::Lambda::Function'));
    expect(fns.map((f) => f.Properties.Handler).sort()).toEqual(['index.handler', 'index.worker']);
    expect(fns[0].Properties.Environment.Variables).toMatchObject({
      SERVICE_NAME: 'reference task service',
      AUTH_ISSUER: CONTEXT.issuer,
      AUTH_CLIENT_ID: CONTEXT.coordinatorClientId,
    });
    // One bundle of ./lambda.ts, the same for both functions.
    const keys = new Set(fns.map((f) => JSON.stringify(f.Properties.Code.S3Key)));
    expect(keys.size).toBe(1);
    expect([...keys][0]).toMatch(/\.zip"$/);
    expect(assembly.stacks.map((s) => s.stackName)).toEqual([stack.stackName]);
  });

  it('names the context a deploy lacks', () => {
    expect(() => referenceTaskServiceStack(new App({ context: { issuer: CONTEXT.issuer } }))).toThrow(
      /missing context: -c coordinatorUrl=… -c coordinatorClientId=… -c tokenUrl=…/,
    );
  });
});

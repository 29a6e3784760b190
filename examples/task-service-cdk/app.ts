import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { referenceTaskServiceStack } from './stack.js';

/**
 * `npx cdk deploy` in this folder: the reference task service on AWS, with cdk-nag's AwsSolutions and Serverless
 * packs run on every synth. The coordinator's settings come from the context (`-c coordinatorUrl=… -c issuer=…
 * -c coordinatorClientId=… -c tokenUrl=…`, the outputs of the coordinator's stack).
 */
const app = new App();
Validations.of(app).addPlugins(new AwsSolutionsChecks(), new ServerlessChecks());
referenceTaskServiceStack(app);
app.synth();

#!/usr/bin/env node
import { App } from 'aws-cdk-lib';
import { buildApp } from '#lib/app.js';

/**
 * The CDK app (`npx cdk synth|deploy --all`). Every setting is CDK context, documented in docs/deploy.md and checked
 * in lib/settings.ts; cdk-nag AwsSolutionsChecks runs on every synth.
 */
const app = new App();
buildApp(app);
app.synth();

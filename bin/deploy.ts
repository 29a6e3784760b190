/**
 * `npm run deploy -- [cdk deploy options, e.g. -c prefix=X --require-approval never]`: every stack, in as many
 * deploys as the tables' new indexes need (ops/deploy.ts; docs/deploy.md, Upgrades). AWS credentials and region come
 * from the usual environment, as for `npx cdk deploy --all`.
 */
import { awsDeployDeps, deployInSteps } from '#ops/deploy.js';

const deploys = await deployInSteps(awsDeployDeps(), process.argv.slice(2));
process.stderr.write(`deploy: done in ${deploys} deploy(s)\n`);

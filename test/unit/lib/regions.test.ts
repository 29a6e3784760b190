import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Aws } from 'aws-cdk-lib';
import { afterAll, describe, expect, it } from 'vitest';
import { buildApp } from '#lib/app.js';
import { assertSupportedRegion, SUPPORTED_PARTITIONS } from '#lib/regions.js';

/** The partitions the app deploys to (lib/regions.ts): a region outside them is refused at synth, with a reason. */
const outRoot = mkdtempSync(join(tmpdir(), 'cdk-regions-'));
afterAll(() => rmSync(outRoot, { recursive: true, force: true }));

describe('supported regions', () => {
  it('is the commercial partition', () => {
    expect(SUPPORTED_PARTITIONS).toEqual(['aws']);
  });

  it.each(['us-east-1', 'eu-west-1', 'ap-southeast-2', 'mx-central-1'])('accepts %s', (region) => {
    expect(() => assertSupportedRegion(region)).not.toThrow();
  });

  it('leaves an env-agnostic app (no region, or a token) to its deployment', () => {
    expect(() => assertSupportedRegion(undefined)).not.toThrow();
    expect(() => assertSupportedRegion(Aws.REGION)).not.toThrow();
  });

  it.each([
    ['cn-north-1', 'aws-cn'],
    ['us-gov-west-1', 'aws-us-gov'],
    ['us-iso-east-1', 'aws-iso'],
    ['eusc-de-east-1', 'aws-eusc'],
  ])('refuses %s, naming its partition (%s) and the supported one', (region, partition) => {
    expect(() => assertSupportedRegion(region)).toThrow(
      new RegExp(
        `^Region "${region}" is in the ${partition} partition; this app deploys to the aws partition only`,
      ),
    );
  });

  it('refuses a region it cannot place in a partition', () => {
    expect(() => assertSupportedRegion('mars-east-1')).toThrow(
      /"mars-east-1" is not a region .* partition cannot be checked/,
    );
  });

  it('is checked when the app is built, before any stack exists', () => {
    const app = new App({
      outdir: mkdtempSync(join(outRoot, 'out-')),
      context: { 'aws:cdk:bundling-stacks': [] },
    });
    expect(() => buildApp(app, { env: { account: '123456789012', region: 'cn-northwest-1' } })).toThrow(
      /aws-cn partition/,
    );
    expect(app.node.children).toHaveLength(0);
  });
});

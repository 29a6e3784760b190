import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WORKER_FUNCTIONS } from '#lib/orchestration-manifest.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** The definition with the CDK substitutions applied (same keys, fake ARNs), and the handler entry of each ARN. */
export function localDefinition(
  opts: { definitionPath?: string; region?: string; accountId?: string } = {},
): { definition: any; functionArns: Map<string, string> } {
  const region = opts.region ?? 'us-east-1';
  const account = opts.accountId ?? '000000000000';
  let text = readFileSync(opts.definitionPath ?? resolve(ROOT, 'statemachines/release.asl.json'), 'utf8');
  const functionArns = new Map<string, string>();
  for (const fn of WORKER_FUNCTIONS) {
    if (!fn.substitution) continue;
    const arn = `arn:aws:lambda:${region}:${account}:function:${fn.name}`;
    functionArns.set(arn, fn.entry);
    text = text.replaceAll(`\${${fn.substitution}}`, arn);
  }
  const missing = /\$\{(\w+)\}/.exec(text);
  if (missing) throw new Error(`No substitution for \${${missing[1]}} in lib/orchestration-manifest.ts`);
  return { definition: JSON.parse(text), functionArns };
}

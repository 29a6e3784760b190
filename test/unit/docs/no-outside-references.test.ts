import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { expect, it } from 'vitest';

/**
 * The repository explains itself: no tracked file cites a document that a clone does not have (the specification
 * and reference notes kept beside the project, by folder or by file name) or an issue by its number. Their facts
 * belong in docs/, in the repository's own words.
 *
 * The patterns are put together from pieces when the test runs, so this file does not match them itself.
 *
 * @covers docs/
 */
const ROOT = resolve(import.meta.dirname, '../../..');
const slash = (...parts: string[]) => parts.join('/');
const dot = (...parts: string[]) => parts.join('.');
const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

const FORBIDDEN: { name: string; pattern: RegExp }[] = [
  ...[
    slash('shared', 'reference'),
    slash('shared', 'spec'),
    dot('ceilings', 'md'),
    dot('toolchain', 'md'),
  ].map((text) => ({ name: text, pattern: new RegExp(literal(text), 'i') })),
  { name: 'an issue number', pattern: new RegExp(['iss', 'ue', ' #?\\d+\\b'].join(''), 'i') },
];

/** Every tracked file but the lockfile (its package names and hashes are not prose). */
function trackedFiles(): string[] {
  return execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
    .split('\0')
    .filter((f) => f && f !== 'package-lock.json')
    .filter((f) => existsSync(join(ROOT, f)) && statSync(join(ROOT, f)).isFile());
}

it('the patterns find what they are for, and this file holds none of them', () => {
  const samples = [
    `see ../${slash('shared', 'reference')}/notes`,
    `as the ${slash('shared', 'spec')} says`,
    `(${dot('ceilings', 'md')} A1)`,
    `${dot('toolchain', 'md')} gotchas`,
    `(${['Iss', 'ue'].join('')} 21)`,
    `${['iss', 'ue'].join('')} #4`,
  ];
  for (const sample of samples)
    expect(
      FORBIDDEN.some(({ pattern }) => pattern.test(sample)),
      sample,
    ).toBe(true);
  for (const harmless of [
    'the issue at hand',
    'issued 3 tokens',
    'functions/shared/errors.ts',
    'an issuer 2 hops away',
  ])
    expect(
      FORBIDDEN.some(({ pattern }) => pattern.test(harmless)),
      harmless,
    ).toBe(false);
  const self = readFileSync(import.meta.filename, 'utf8');
  expect(FORBIDDEN.filter(({ pattern }) => pattern.test(self)).map((f) => f.name)).toEqual([]);
});

it('no tracked file cites a document outside the repository or an issue number', () => {
  const files = trackedFiles();
  expect(files.length).toBeGreaterThan(100);
  const found: string[] = [];
  for (const file of files) {
    const text = readFileSync(join(ROOT, file), 'utf8');
    if (text.includes('\0')) continue; // binary (screenshots)
    const lines = text.split('\n');
    for (const [n, line] of lines.entries())
      for (const { name, pattern } of FORBIDDEN)
        if (pattern.test(line)) found.push(`${file}:${n + 1}: ${name}: ${line.trim().slice(0, 120)}`);
  }
  expect(found).toEqual([]);
});

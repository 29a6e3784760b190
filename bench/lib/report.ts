import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';

/** The machine line every benchmark section starts with: date, cores, memory, CPU, Node and Java versions. */
export function machineInfo(): string {
  const nproc = (() => {
    try {
      return execFileSync('nproc', { encoding: 'utf8' }).trim();
    } catch {
      return String(cpus().length);
    }
  })();
  // java -version writes to stderr.
  const java =
    spawnSync('java', ['-version'], { encoding: 'utf8' })
      .stderr?.split('\n')
      .find((l) => l.includes(' version ')) ?? 'no java';
  return [
    `Date: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`,
    `machine: ${nproc} cores (\`nproc\`), ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ${cpus()[0]?.model ?? 'unknown CPU'}`,
    `Node ${process.version}, ${java}`,
  ].join('; ');
}

/**
 * Replaces (or appends) the section between `<!-- name:start -->` and `<!-- name:end -->` in a markdown file, so
 * each benchmark rewrites only its own part of docs/benchmarks.md.
 */
export function writeSection(file: string, name: string, markdown: string): void {
  const start = `<!-- ${name}:start -->`;
  const end = `<!-- ${name}:end -->`;
  const block = `${start}\n${markdown.trim()}\n${end}`;
  const current = existsSync(file) ? readFileSync(file, 'utf8') : '# Benchmarks\n';
  const i = current.indexOf(start);
  const j = current.indexOf(end);
  const next =
    i >= 0 && j > i
      ? `${current.slice(0, i)}${block}${current.slice(j + end.length)}`
      : `${current.replace(/\s*$/, '')}\n\n${block}\n`;
  writeFileSync(file, next);
}

export const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

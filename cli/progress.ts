import cliProgress from 'cli-progress';
import type { Output } from './output.js';

/**
 * A byte progress bar on stderr, or nothing at all in a pipe or with --json (then `tick` and `stop` are no-ops,
 * so callers never ask which mode they are in).
 */
export interface ByteBar {
  tick(bytes: number): void;
  set(bytes: number): void;
  label(text: string): void;
  stop(): void;
}

const MiB = 1024 * 1024;

export function byteBar(o: Output, label: string, total: number, start = 0): ByteBar {
  if (!o.bars) return { tick() {}, set() {}, label() {}, stop() {} };
  const bar = new cliProgress.SingleBar(
    {
      format: '{label} |{bar}| {percentage}% {doneMiB}/{totalMiB} MiB {speed}',
      hideCursor: true,
      stream: process.stderr,
      etaBuffer: 20,
    },
    cliProgress.Presets.shades_classic,
  );
  const started = Date.now();
  let value = start;
  const payload = () => ({
    label,
    doneMiB: (value / MiB).toFixed(1),
    totalMiB: (total / MiB).toFixed(1),
    speed: `${((value - start) / MiB / Math.max((Date.now() - started) / 1000, 0.001)).toFixed(1)} MiB/s`,
  });
  bar.start(Math.max(total, 1), value, payload());
  return {
    tick(bytes) {
      value += bytes;
      bar.update(value, payload());
    },
    set(bytes) {
      value = bytes;
      bar.update(value, payload());
    },
    label(text) {
      label = text;
      bar.update(value, payload());
    },
    stop() {
      bar.stop();
    },
  };
}

/**
 * One bar for many transfers (a whole study): bytes over all files, the files done, and `log` for a line per
 * failure above the bar. In a pipe or with --json there is no bar, and `log` writes the line to stderr.
 */
export interface BatchBar {
  tick(bytes: number): void;
  fileDone(): void;
  log(line: string): void;
  stop(): void;
}

export function batchBar(
  o: Output,
  label: string,
  totalBytes: number,
  totalFiles: number,
  start = 0,
): BatchBar {
  if (!o.bars || totalFiles === 0) return { tick() {}, fileDone() {}, log: (line) => o.err(line), stop() {} };
  const multi = new cliProgress.MultiBar(
    {
      format: '{label} |{bar}| {percentage}% {doneMiB}/{totalMiB} MiB {files} files {speed}',
      hideCursor: true,
      stream: process.stderr,
      etaBuffer: 20,
    },
    cliProgress.Presets.shades_classic,
  );
  const started = Date.now();
  let value = start;
  let files = 0;
  const payload = () => ({
    label,
    doneMiB: (value / MiB).toFixed(1),
    totalMiB: (totalBytes / MiB).toFixed(1),
    files: `${files}/${totalFiles}`,
    speed: `${((value - start) / MiB / Math.max((Date.now() - started) / 1000, 0.001)).toFixed(1)} MiB/s`,
  });
  const bar = multi.create(Math.max(totalBytes, 1), value, payload());
  return {
    tick(bytes) {
      value += bytes;
      bar.update(value, payload());
    },
    fileDone() {
      files++;
      bar.update(value, payload());
    },
    log: (line) => multi.log(line.endsWith('\n') ? line : `${line}\n`),
    stop: () => multi.stop(),
  };
}

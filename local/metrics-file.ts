import { closeSync, openSync, renameSync, statSync, writeSync } from 'node:fs';
import type { Component } from './component.js';

/**
 * Where the local stack puts the functions' metric lines. The functions print their metrics as CloudWatch embedded
 * metric format lines on stdout (functions/shared/metrics.ts): on AWS, Lambda hands stdout to CloudWatch Logs, which
 * turns those lines into metrics, so there they must stay on stdout. The local stack has no CloudWatch, and the lines
 * (three a minute from the schedules alone, many more under load) would bury its log; so it appends them to a file,
 * and prints them as well only at LOG_LEVEL=debug.
 *
 * The handlers run in this process, so the lines are taken where they leave it: process.stdout.write. Powertools
 * writes each line with one console.log, so one write is one line, and a write that begins `{"_aws":` is a metric
 * line. When the file passes `maxBytes` it is renamed to `<file>.1` (replacing an older one) and begun afresh, so a
 * long soak cannot fill the disk.
 */
export interface MetricLinesOptions {
  file: string;
  /** Print the lines on stdout too (LOG_LEVEL=debug). */
  echo: boolean;
  /** Size at which the file is rotated; 20 MiB by default. */
  maxBytes?: number;
}

const EMF_PREFIX = '{"_aws":';

export function routeMetricLines(opts: MetricLinesOptions): Component {
  const maxBytes = opts.maxBytes ?? 20 * 1024 * 1024;
  let fd = openSync(opts.file, 'a');
  let size = statSync(opts.file).size;
  const append = (text: string) => {
    const bytes = Buffer.from(text.endsWith('\n') ? text : `${text}\n`);
    if (size > 0 && size + bytes.length > maxBytes) {
      closeSync(fd);
      renameSync(opts.file, `${opts.file}.1`);
      fd = openSync(opts.file, 'a');
      size = 0;
    }
    // Synchronous, like the stdout write it replaces: the order of the lines is the order of the points.
    writeSync(fd, bytes);
    size += bytes.length;
  };

  const stdout = process.stdout;
  const original = stdout.write;
  stdout.write = function write(this: NodeJS.WriteStream, chunk: unknown, ...rest: unknown[]): boolean {
    const text =
      typeof chunk === 'string'
        ? chunk
        : chunk instanceof Uint8Array
          ? Buffer.from(chunk).toString('utf8')
          : undefined;
    if (text?.startsWith(EMF_PREFIX)) {
      try {
        append(text);
      } catch {
        // A metric must never fail the work it measures; the line then goes to stdout as on AWS.
        return (original as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
      }
      if (!opts.echo) {
        const callback = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
        if (callback) process.nextTick(callback);
        return true;
      }
    }
    return (original as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
  } as typeof stdout.write;

  return {
    name: 'metric lines',
    env: {},
    stop: async () => {
      if (stdout.write !== original) stdout.write = original;
      try {
        closeSync(fd);
      } catch {
        // already closed
      }
    },
  };
}

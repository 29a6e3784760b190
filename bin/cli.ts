import { run } from '#cli/program.js';

/**
 * `drc`, the operator CLI (cli/program.ts). Run as `npx drc …` (package.json "bin", through bin/drc.mjs) or
 * `npx tsx bin/cli.ts …`. Ctrl-C stops live output and exits 130.
 */
let stopLive: (() => void) | undefined;
process.on('SIGINT', () => {
  stopLive?.();
  // A progress bar hides the cursor while it draws: give it back even when the bar never got to stop.
  if (process.stderr.isTTY) process.stderr.write('\x1b[?25h\n');
  process.exit(130);
});

// Piped into `head` and the like: a closed stdout ends the command quietly.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

const code = await run(process.argv.slice(2), {
  onInterrupt: (stop) => {
    stopLive = stop;
  },
});
process.exitCode = code;

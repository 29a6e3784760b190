import { type Command, InvalidArgumentError } from 'commander';

/** Option parsers and option sets that several command groups share. */
export const positiveInt = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a whole number');
  return n;
};

export const seconds = (v: string) => {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('expected a positive number of seconds');
  return n;
};

/** The paging options of every `ls`. */
export const listOptions = (c: Command) =>
  c
    .option('--limit <n>', 'page size (at most 100)', positiveInt)
    .option('--offset <n>', 'records to skip', positiveInt)
    .option('--all', 'every page, following the next links');

/** The query of the first page, from the paging options given. */
export const pageQuery = (opts: { limit?: number; offset?: number }) => ({
  ...(opts.limit !== undefined ? { limit: opts.limit } : {}),
  ...(opts.offset !== undefined ? { offset: opts.offset } : {}),
});

/** The poll interval of the commands that follow something live (`releases watch`, `events tail`). */
export const watchInterval = (c: Command) =>
  c.option('--interval <seconds>', 'how often to poll (default 1)', seconds, 1);

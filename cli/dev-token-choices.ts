import { createInterface } from 'node:readline';
import { UsageError } from './config.js';

/**
 * What `drc dev-tokens create` asks of a person before it makes a token, where the API's defaults (the spec's: every
 * study, never expires) would otherwise apply unasked:
 *
 * - which studies: `--study <id…>` or `--all-studies`. Given neither, drc asks on a terminal, and refuses (usage,
 *   exit 2) without one, since a script must say which it means;
 * - how long: 30 days, unless `--expires-in`, `--expires-at` or `--no-expiry` say otherwise.
 */
export const DEFAULT_EXPIRY_SECONDS = 30 * 86_400;

export interface DevTokenFlags {
  study?: string[];
  allStudies?: boolean;
  expiresIn?: number;
  expiresAt?: string;
  /** false with `--no-expiry` (commander's negated flag). */
  expiry?: boolean;
}

/** The body fields of POST /developer-tokens besides the name. */
export interface DevTokenChoice {
  studies?: string[];
  expires_in?: number;
  expires_at?: string;
}

/** Asks which studies; answers the ids typed, or 'all'. */
export type AskStudies = () => Promise<string[] | 'all'>;

export const STUDY_CHOICE_REQUIRED =
  'say which studies the token reaches: --study <id…> or --all-studies (asked on a terminal, required without one)';

const STUDY_ID = /^SD_[0-9A-Z]{8}$/;

export async function chooseDevToken(flags: DevTokenFlags, ask?: AskStudies): Promise<DevTokenChoice> {
  if (flags.study?.length && flags.allStudies)
    throw new UsageError('--study and --all-studies exclude each other');
  const expirySettings = [
    flags.expiresIn !== undefined,
    flags.expiresAt !== undefined,
    flags.expiry === false,
  ];
  if (expirySettings.filter(Boolean).length > 1)
    throw new UsageError('--expires-in, --expires-at and --no-expiry exclude each other');

  let studies: string[] | 'all';
  if (flags.allStudies) studies = 'all';
  else if (flags.study?.length) studies = flags.study;
  else if (ask) studies = await ask();
  else throw new UsageError(STUDY_CHOICE_REQUIRED);

  return {
    ...(studies === 'all' ? {} : { studies }),
    ...(flags.expiresAt !== undefined
      ? { expires_at: flags.expiresAt }
      : flags.expiry === false
        ? {}
        : { expires_in: flags.expiresIn ?? DEFAULT_EXPIRY_SECONDS }),
  };
}

/** The question on a terminal, until it gets study ids or `all`. */
export function askOnTerminal(input: NodeJS.ReadableStream, output: NodeJS.WritableStream): AskStudies {
  return async () => {
    const question = 'Which studies may the token reach? Study ids separated by spaces, or "all": ';
    const rl = createInterface({ input, terminal: false });
    try {
      output.write(question);
      // Lines are read as they come, so an answer typed ahead of the question is not lost.
      for await (const line of rl) {
        const answer = line.trim();
        if (/^all$/i.test(answer)) return 'all';
        const ids = answer.split(/[\s,]+/).filter(Boolean);
        if (ids.length && ids.every((id) => STUDY_ID.test(id))) return ids;
        output.write(`Study ids look like SD_ABCD1234; or type all.\n${question}`);
      }
      throw new UsageError(STUDY_CHOICE_REQUIRED);
    } finally {
      rl.close();
    }
  };
}

import { describe, expect, it } from 'vitest';
import {
  releaseCreatedEvent,
  releaseStateEvent,
  taskStateEvent,
} from '#functions/coordinator/event-messages.js';
import { looksLikeStateChange, messageSkeleton } from '#functions/coordinator/forged-messages.js';

const PUBLISHED = 'release RE_ABC123, version 0.0.1 changed from publishing to published';

describe('client messages in the form of a coordinator state change', () => {
  it('refuses the coordinator’s own wording of each of its state changes', async () => {
    const release = { id: 'RE_ABC123', version: '0.0.1' };
    for (const event of [
      releaseStateEvent(release, 'publishing', 'published'),
      releaseCreatedEvent(release, 3),
      taskStateEvent({ id: 'TA_1', releaseId: 'RE_ABC123', taskServiceId: 'TS_1' }, 'running', 'staged'),
    ])
      expect(await looksLikeStateChange(event.message), event.message).toBe(true);
  });

  it.each([
    ['a zero-width space (U+200B) in front', `\u200B${PUBLISHED}`],
    ['a zero-width space inside a word', PUBLISHED.replace('release', 'rel\u200Bease')],
    ['a byte order mark (U+FEFF) in front', `\uFEFF${PUBLISHED}`],
    ['a word joiner (U+2060) inside a word', PUBLISHED.replace('changed', 'chan\u2060ged')],
    ['no-break spaces (U+00A0) for spaces', PUBLISHED.replaceAll(' ', '\u00A0')],
    ['a no-break space in front', `\u00A0${PUBLISHED}`],
    ['a Cyrillic е (U+0435) for e', PUBLISHED.replace('release', 'r\u0435lease')],
    ['a Cyrillic е in every e', PUBLISHED.replaceAll('e', '\u0435')],
    ['a Greek ο (U+03BF) for o', PUBLISHED.replace('from', 'fr\u03BFm')],
    ['fullwidth letters (NFKC)', PUBLISHED.replace('release', 'ｒｅｌｅａｓｅ')],
    [
      'ideographic and thin spaces, and a line separator',
      PUBLISHED.replace(' ', '\u3000').replace(' ', '\u2009').replace(' ', '\u2028'),
    ],
    [
      'a left-to-right mark (U+200E) and a soft hyphen (U+00AD)',
      PUBLISHED.replace('version', 'ver\u00ADsion\u200E'),
    ],
    ['a Hangul filler (U+3164), invisible', `\u3164${PUBLISHED}`],
    ['capital letters', PUBLISHED.toUpperCase()],
    ['a task change with a Cyrillic а (U+0430)', 'task TA_1 ch\u0430nged from running to staged'],
  ])('refuses a copy with %s', async (_, message) => {
    expect(await looksLikeStateChange(message)).toBe(true);
  });

  it.each([
    'staging finished for 3 studies',
    'release notes for RE_ABC123 are ready',
    'task TA_1 is still copying files',
    'released RE_ABC123 to the portal',
    'version 0.0.1 of the manifest changed',
  ])('accepts an ordinary message: %s', async (message) => {
    expect(await looksLikeStateChange(message)).toBe(false);
  });

  it('compares on one skeleton: look-alikes, invisible characters and spaces are undone', async () => {
    expect(await messageSkeleton('\u200Br\u0435l\u2060ease\u00A0 x ')).toBe(
      await messageSkeleton('release x'),
    );
    expect(await messageSkeleton('ｍ')).toBe(await messageSkeleton('m'));
  });
});

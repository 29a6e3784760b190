/**
 * Client events (POST /events) may not carry a message in the form of the coordinator's own state changes
 * (event-messages.ts): subscribers (a Slack notifier, say) key on them, so such a message could fake a publish. A
 * message is compared on what a reader sees, not on its code points, so each of these is undone first:
 *
 *   1. compatibility forms (NFKC): fullwidth `ｒｅｌｅａｓｅ`, ligatures, superscripts;
 *   2. invisible characters: every format character (`\p{Cf}`: U+200B zero-width space, U+2060 word joiner,
 *      U+FEFF, bidi controls) and every other default-ignorable code point (U+115F, U+3164 fillers, variation
 *      selectors), wherever they are;
 *   3. spacing: every kind of space (no-break, thin, ideographic, line separators...) counts as one space, and the
 *      message is trimmed;
 *   4. look-alike letters: the message's confusable skeleton (Unicode UTS #39: NFD, each character replaced by its
 *      prototype in Unicode's confusables.txt, NFD again, with the unhomoglyph package's copy of that table), in
 *      lower case, so a Cyrillic `е` or a Greek `ο` is the Latin letter it looks like.
 *
 * The coordinator's own wording goes through the same steps, so both sides are compared in one alphabet.
 */
const INVISIBLE = /[\p{Cf}\p{Default_Ignorable_Code_Point}]/gu;
const SPACES = /[\s\p{Z}]+/gu;

type Skeleton = (message: string) => string;

/**
 * The skeleton function, made at the first client event rather than at a cold start: unhomoglyph's table and the
 * expression it builds from it cost about 20 ms of CPU, which every other request of the Events function would pay
 * (`npm run bench:cold`).
 */
let loaded: Promise<{ skeleton: Skeleton; forms: RegExp[] }> | undefined;

function load() {
  loaded ??= import('unhomoglyph').then(({ default: unhomoglyph }) => {
    const skeleton: Skeleton = (message) => {
      const visible = message.normalize('NFKC').replace(INVISIBLE, '').replace(SPACES, ' ').trim();
      const mapped = unhomoglyph(visible.toLowerCase().normalize('NFD')).normalize('NFD').toLowerCase();
      // A prototype may itself be a space (a look-alike of one): spaces are counted again.
      return mapped.replace(SPACES, ' ').trim();
    };
    return { skeleton, forms: stateChangeForms(skeleton) };
  });
  return loaded;
}

/** What `message` looks like to a reader, as a string to compare: the steps above. */
export async function messageSkeleton(message: string): Promise<string> {
  return (await load()).skeleton(message);
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** An id, a version or a state: anything without a space. */
const ANY = '\\S+';

/** The coordinator's state-change messages (event-messages.ts), each word as its skeleton. */
function stateChangeForms(skeleton: Skeleton): RegExp[] {
  const word = (text: string) => escapeRegExp(skeleton(text));
  return [
    // release <id>, version <v> changed from <a> to <b>
    `${word('release')} ${ANY} ?${word(',')} ?${word('version')} ${ANY} ${word('changed from')} ${ANY} ${word('to')} ${ANY}`,
    // release <id>, version <v> created in state <s>
    `${word('release')} ${ANY} ?${word(',')} ?${word('version')} ${ANY} ${word('created in state')}(?: |$)`,
    // task <id> changed from <a> to <b>
    `${word('task')} ${ANY} ${word('changed from')} ${ANY} ${word('to')} ${ANY}`,
  ].map((form) => new RegExp(`^${form}`, 'u'));
}

/** Whether a client's message reads as one of the coordinator's own state changes. */
export async function looksLikeStateChange(message: string): Promise<boolean> {
  const { skeleton, forms } = await load();
  const shown = skeleton(message);
  return forms.some((form) => form.test(shown));
}

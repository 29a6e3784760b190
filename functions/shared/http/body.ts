import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { BadRequestError, ValidationError } from '../errors.js';
import { LIMITS } from '../limits.js';

/**
 * Whether JSON text nests arrays and objects deeper than `max`, read in one pass over the text (brackets inside
 * strings do not count) without parsing it, so a body nested 100,000 deep costs no recursion anywhere.
 */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/**
 * The request's JSON body (undefined when there is none), within LIMITS.bodyDepth and LIMITS.bodyBytes: too deep,
 * too large or not JSON is a 400.
 */
export function readBody(event: APIGatewayProxyEventV2): unknown {
  if (event.body === undefined || event.body === null || event.body === '') return undefined;
  const text = event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
  if (text.trim() === '') return undefined;
  // Before anything parses or walks the body, whatever its size: a deeply nested one is refused as it is.
  if (nestsDeeperThan(text, LIMITS.bodyDepth))
    throw ValidationError.field(
      'body',
      `nests arrays and objects more than ${LIMITS.bodyDepth} levels deep; at most ${LIMITS.bodyDepth} are accepted`,
    );
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    if (Buffer.byteLength(text) > LIMITS.bodyBytes) throw oversizeBody(text, undefined);
    throw new BadRequestError('Request body is not valid JSON', { cause: err });
  }
  if (Buffer.byteLength(text) > LIMITS.bodyBytes) throw oversizeBody(text, parsed);
  return parsed;
}

/**
 * A body over LIMITS.bodyBytes is a 400 that names the field responsible: the top-level field whose JSON is the
 * largest (a 500 KB description names `description`), or `body` when the body is not a JSON object.
 */
function oversizeBody(text: string, parsed: unknown): ValidationError {
  const bytes = Buffer.byteLength(text);
  const rule = `the request body is ${bytes} bytes; at most ${LIMITS.bodyBytes} are accepted`;
  let field = 'body';
  if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
    let largest = -1;
    for (const [k, v] of Object.entries(parsed)) {
      const size = Buffer.byteLength(JSON.stringify(v) ?? '');
      if (size > largest) [field, largest] = [k, size];
    }
  }
  return new ValidationError(`Invalid ${field}: too large (${rule})`, { [field]: [`is too large: ${rule}`] });
}

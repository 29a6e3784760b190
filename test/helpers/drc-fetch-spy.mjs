// Preloaded into a `drc` child process by the CLI tests (NODE_OPTIONS=--import=<this file>): it records every
// request drc makes with fetch (method, URL, Range header, answer status) as JSON lines in DRC_SPY_LOG, so a test
// sees what went over the wire, not what drc says it did. Optionally it slows requests down so a test can kill
// drc halfway through a transfer: DRC_SPY_PUT_DELAY_MS before each PUT, DRC_SPY_CHUNK_DELAY_MS before each chunk
// of a presigned S3 GET's body.
import { appendFileSync } from 'node:fs';

const log = process.env.DRC_SPY_LOG;
const putDelay = Number(process.env.DRC_SPY_PUT_DELAY_MS ?? 0);
const chunkDelay = Number(process.env.DRC_SPY_CHUNK_DELAY_MS ?? 0);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const realFetch = globalThis.fetch;

globalThis.fetch = async (input, init = {}) => {
  const request = input instanceof Request ? input : undefined;
  const url = request ? request.url : String(input);
  const method = (init.method ?? request?.method ?? 'GET').toUpperCase();
  const headers = new Headers(init.headers ?? request?.headers);
  if (method === 'PUT' && putDelay) await sleep(putDelay);
  const res = await realFetch(input, init);
  if (log)
    appendFileSync(
      log,
      `${JSON.stringify({ method, url, range: headers.get('range'), status: res.status })}\n`,
    );
  const presigned = /[?&]X-Amz-Signature=/i.test(url);
  if (chunkDelay && presigned && method === 'GET' && res.body) {
    const reader = res.body.getReader();
    const slowed = new ReadableStream({
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        await sleep(chunkDelay);
        controller.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    });
    return new Response(slowed, { status: res.status, statusText: res.statusText, headers: res.headers });
  }
  return res;
};

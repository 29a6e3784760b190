import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { header } from './proxy.js';
import { METER_HEADER, type MeterRecord } from './records.js';

const XMLNS = 'http://sns.amazonaws.com/doc/2010-03-31/';

/**
 * A stand-in for the SNS events topic (AWS query protocol: Publish and PublishBatch), so the stack publishes its
 * events as a deployed one does and each publish is counted. Answers every message as delivered.
 */
export function snsSink(record: (rec: MeterRecord) => void) {
  return (req: IncomingMessage, res: ServerResponse) => {
    const inv = header(req, METER_HEADER);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const form = new URLSearchParams(raw.toString('utf8'));
      const action = form.get('Action') ?? '';
      const ids = [...form.keys()]
        .map((k) => /^PublishBatchRequestEntries\.member\.(\d+)\.Id$/.exec(k))
        .filter((m): m is RegExpExecArray => m !== null)
        .map((m) => form.get(m[0]) ?? '');
      record({
        k: 'sns',
        ...(inv ? { inv } : {}),
        at: Date.now(),
        action,
        messages: action === 'PublishBatch' ? ids.length : 1,
        bytes: raw.length,
      });
      const rid = randomUUID();
      const metadata = `<ResponseMetadata><RequestId>${rid}</RequestId></ResponseMetadata>`;
      const xml =
        action === 'PublishBatch'
          ? `<PublishBatchResponse xmlns="${XMLNS}"><PublishBatchResult><Successful>${ids
              .map((id) => `<member><Id>${id}</Id><MessageId>${randomUUID()}</MessageId></member>`)
              .join('')}</Successful><Failed/></PublishBatchResult>${metadata}</PublishBatchResponse>`
          : `<PublishResponse xmlns="${XMLNS}"><PublishResult><MessageId>${randomUUID()}</MessageId></PublishResult>${metadata}</PublishResponse>`;
      res.writeHead(200, { 'Content-Type': 'text/xml', 'x-amzn-RequestId': rid });
      res.end(xml);
    });
  };
}

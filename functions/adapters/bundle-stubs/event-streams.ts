/**
 * Stands in for `@smithy/core/event-streams` in the function bundles (lib/bundling.ts). Every SDK client carries it,
 * about 19 KB, behind a dynamic import that runs only for an operation whose input or output is an event stream
 * (S3 SelectObjectContent, Lambda InvokeWithResponseStream, ...). No operation a function sends has one:
 * test/unit/adapters/bundle-stubs.test.ts checks every SDK command imported under functions/, and would fail the day
 * one is added. Should one still get here, it fails loudly instead of misbehaving.
 */
function refuse(): never {
  throw new Error(
    'This operation uses an event stream, which this function bundle leaves out (lib/bundling.ts, bundle stubs)',
  );
}

export class EventStreamSerde {
  constructor() {
    refuse();
  }
}

export const eventStreamSerdeProvider = refuse;

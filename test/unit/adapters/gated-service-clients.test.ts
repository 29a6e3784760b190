import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { gatedServiceClients } from '#functions/adapters/gated-service-clients.js';

const lambda = mockClient(LambdaClient);
afterEach(() => lambda.reset());

const payload = (body: unknown) => ({ StatusCode: 200, Payload: Buffer.from(JSON.stringify(body)) as never });
const clients = () =>
  gatedServiceClients(() => new LambdaClient({ region: 'us-east-1' }), 'ServiceClientGate');
const sent = () =>
  lambda.commandCalls(InvokeCommand).map((c) => {
    const input = c.args[0].input;
    return { ...input, Payload: JSON.parse(Buffer.from(input.Payload as Uint8Array).toString('utf8')) };
  });

describe('task services’ clients through the service-client gate', () => {
  it('asks the gate, synchronously, for a client of the scope coordinator/service, and answers its id and secret', async () => {
    lambda.on(InvokeCommand).resolves(payload({ ok: true, clientId: 'abc', clientSecret: 's3cret' }));
    expect(await clients().create('stager')).toEqual({ clientId: 'abc', clientSecret: 's3cret' });
    expect(sent()).toEqual([
      {
        FunctionName: 'ServiceClientGate',
        InvocationType: 'RequestResponse',
        Payload: { action: 'create', name: 'stager', scope: 'coordinator/service' },
      },
    ]);
  });

  it('asks the gate to delete a client', async () => {
    lambda.on(InvokeCommand).resolves(payload({ ok: true, deleted: 'abc' }));
    await clients().delete('abc');
    expect(sent()[0].Payload).toEqual({ action: 'delete', clientId: 'abc' });
  });

  it('asks the gate to replace a client’s secret, and answers the new one', async () => {
    lambda.on(InvokeCommand).resolves(payload({ ok: true, replaced: 'abc', clientSecret: 'n3w' }));
    expect(await clients().replaceSecret('abc')).toEqual({ clientSecret: 'n3w' });
    expect(sent()[0].Payload).toEqual({ action: 'replace_secret', clientId: 'abc' });
    lambda.reset();
    lambda.on(InvokeCommand).resolves(payload({ ok: true, deleted: 'abc' }));
    await expect(clients().replaceSecret('abc')).rejects.toMatchObject({ status: 503 });
  });

  it('answers 503 identity_provider_unavailable for a refusal, a failed gate or an answer it cannot read', async () => {
    for (const out of [
      payload({ ok: false, error: { status: 403, code: 'forbidden', message: 'not made by the gate' } }),
      {
        StatusCode: 200,
        FunctionError: 'Unhandled',
        Payload: Buffer.from('{"errorMessage":"boom"}') as never,
      },
      payload({ ok: true }),
    ]) {
      lambda.reset();
      lambda.on(InvokeCommand).resolves(out);
      await expect(clients().delete('abc')).rejects.toMatchObject({
        status: 503,
        code: 'identity_provider_unavailable',
      });
    }
    lambda.reset();
    lambda.on(InvokeCommand).rejects(new Error('AccessDeniedException'));
    await expect(clients().create('x')).rejects.toMatchObject({ status: 503 });
  });
});

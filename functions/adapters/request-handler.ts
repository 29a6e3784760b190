import { Agent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { NodeHttpHandler } from '@smithy/node-http-handler';

/** The HTTP handler of every AWS client of a container (SDK clients and signed requests alike): kept-alive sockets. */
export const requestHandler = () =>
  new NodeHttpHandler({
    httpAgent: new Agent({ keepAlive: true, maxSockets: 64 }),
    httpsAgent: new HttpsAgent({ keepAlive: true, maxSockets: 64 }),
  });

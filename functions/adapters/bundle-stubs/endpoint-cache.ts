/**
 * Stands in for `@aws-sdk/endpoint-cache` (and the LRU library under it, about 7.5 KB) in the function bundles
 * (lib/bundling.ts). The DynamoDB client builds an endpoint-discovery cache when it is created, but only a command
 * that carries the endpoint-discovery plugin ever reads it, and none of the SDK's DynamoDB commands does:
 * test/unit/adapters/bundle-stubs.test.ts sends every operation the functions use with discovery switched on and a
 * cache that throws, and would fail the day one needs it. Constructing one (the client does) is inert; anything
 * else fails loudly.
 */
function refuse(): never {
  throw new Error('Endpoint discovery is left out of this function bundle (lib/bundling.ts, bundle stubs)');
}

export class EndpointCache {
  getEndpoint(_key: string): string | undefined {
    return refuse();
  }
  get(_key: string): never {
    return refuse();
  }
  set(_key: string, _endpoints: unknown[]): void {
    refuse();
  }
  delete(_key: string): void {
    refuse();
  }
  has(_key: string): boolean {
    return refuse();
  }
  clear(): void {
    refuse();
  }
}

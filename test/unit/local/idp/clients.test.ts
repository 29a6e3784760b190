import { describe, expect, it } from 'vitest';
import { DEFAULT_CLIENTS, parseClients } from '#local/idp/clients.js';

describe('IDP_CLIENTS', () => {
  it('defaults to the coordinator (service), a task-service client (service) and an admin client', () => {
    expect(parseClients(undefined)).toBe(DEFAULT_CLIENTS);
    expect(DEFAULT_CLIENTS.map((c) => [c.client_id, c.roles])).toEqual([
      ['coordinator', ['service']],
      ['task-service', ['service']],
      ['admin', ['admin']],
    ]);
  });

  it('reads a JSON array and fills roles and groups', () => {
    expect(parseClients('[{"client_id":"a","client_secret":"s","groups":["SD_1"]}]')).toEqual([
      { client_id: 'a', client_secret: 's', roles: [], groups: ['SD_1'] },
    ]);
  });

  it.each([
    ['not JSON', '[{', /not valid JSON/],
    ['a client without a secret', '[{"client_id":"a"}]', /client_secret/],
    [
      'a repeated client_id',
      '[{"client_id":"a","client_secret":"s"},{"client_id":"a","client_secret":"t"}]',
      /repeats/,
    ],
    ['an empty list', '[]', /IDP_CLIENTS/],
  ])('refuses %s', (_, json, message) => {
    expect(() => parseClients(json)).toThrow(message);
  });
});

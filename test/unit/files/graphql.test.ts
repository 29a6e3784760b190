import { describe, expect, it, vi } from 'vitest';
import { runGraphql } from '#functions/files/graphql.js';
import { log } from '#functions/shared/log.js';
import { info, member, stubDeps } from './stub-deps.js';

describe('GraphQL errors', () => {
  it('hide internal failures behind a generic message with the request id, keeping the detail in the log', async () => {
    const logged = vi.spyOn(log, 'error').mockImplementation(() => undefined);
    const deps = stubDeps({
      files: { listFiles: vi.fn(async () => Promise.reject(new Error('secret table name'))) },
    });
    const res = await runGraphql(
      { query: '{ allFiles(studyId: "SD_AAAAAAAA") { totalCount } }' },
      { deps, caller: member(['SD_AAAAAAAA']), baseUrl: 'https://x', info },
      'req-1',
    );
    const body = res.body as { errors: { message: string; extensions: Record<string, unknown> }[] };
    expect(body.errors[0].message).toBe('Internal server error (request req-1)');
    expect(body.errors[0].extensions.code).toBe('INTERNAL_SERVER_ERROR');
    expect(JSON.stringify(body)).not.toContain('secret table name');
    expect(logged).toHaveBeenCalledWith(
      'graphql resolver failed',
      expect.objectContaining({ requestId: 'req-1', error: expect.stringContaining('secret table name') }),
    );
    logged.mockRestore();
  });
});

import { describe, expect, it } from 'vitest';
import { withFreshPorts } from '#local/port-race.js';

describe('withFreshPorts', () => {
  it('tries again when a probed port was taken before the stack bound it', async () => {
    let calls = 0;
    const started = await withFreshPorts(async () => {
      calls++;
      if (calls < 3)
        throw new Error('Port 41151 (SFN_PORT) is already in use: is another local stack running?');
      return 'up';
    });
    expect(started).toBe('up');
    expect(calls).toBe(3);
  });

  it('gives up after its attempts, and never retries any other failure', async () => {
    let calls = 0;
    await expect(
      withFreshPorts(async () => {
        calls++;
        throw new Error('Port 1 (FILES_PORT) is already in use');
      }, 2),
    ).rejects.toThrow('already in use');
    expect(calls).toBe(2);
    calls = 0;
    await expect(
      withFreshPorts(async () => {
        calls++;
        throw new Error('the local stack was not ready within 120000 ms');
      }),
    ).rejects.toThrow('not ready');
    expect(calls).toBe(1);
  });
});

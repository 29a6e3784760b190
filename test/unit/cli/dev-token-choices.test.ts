import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { UsageError } from '#cli/config.js';
import { askOnTerminal, chooseDevToken, DEFAULT_EXPIRY_SECONDS } from '#cli/dev-token-choices.js';

describe('drc dev-tokens create: the choices a person makes', () => {
  it('the studies: --study or --all-studies; the expiry: 30 days unless said otherwise', async () => {
    expect(await chooseDevToken({ study: ['SD_AAAAAAAA'] })).toEqual({
      studies: ['SD_AAAAAAAA'],
      expires_in: DEFAULT_EXPIRY_SECONDS,
    });
    expect(DEFAULT_EXPIRY_SECONDS).toBe(30 * 24 * 3600);
    expect(await chooseDevToken({ allStudies: true })).toEqual({ expires_in: DEFAULT_EXPIRY_SECONDS });
    expect(await chooseDevToken({ allStudies: true, expiresIn: 60 })).toEqual({ expires_in: 60 });
    expect(await chooseDevToken({ allStudies: true, expiresAt: '2027-01-31T00:00:00Z' })).toEqual({
      expires_at: '2027-01-31T00:00:00Z',
    });
    // The API's own default, by choice: every study, never expires.
    expect(await chooseDevToken({ allStudies: true, expiry: false })).toEqual({});
  });

  it('without a study choice and no terminal to ask on, refuses with a usage error that says what to give', async () => {
    const refused = chooseDevToken({ expiresIn: 60 });
    await expect(refused).rejects.toBeInstanceOf(UsageError);
    await expect(refused).rejects.toThrow('--study <id…> or --all-studies');
  });

  it('refuses choices that exclude each other', async () => {
    await expect(chooseDevToken({ study: ['SD_AAAAAAAA'], allStudies: true })).rejects.toThrow(/exclude/);
    await expect(chooseDevToken({ allStudies: true, expiresIn: 5, expiry: false })).rejects.toThrow(
      /exclude/,
    );
    await expect(
      chooseDevToken({ allStudies: true, expiresIn: 5, expiresAt: '2027-01-01T00:00:00Z' }),
    ).rejects.toThrow(/exclude/);
  });

  it('on a terminal, asks until it gets study ids or "all"', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    let shown = '';
    output.on('data', (d: Buffer) => {
      shown += d.toString();
    });
    const ask = askOnTerminal(input, output);
    const answer = chooseDevToken({}, ask);
    input.write('nonsense\n');
    input.write('SD_AAAAAAAA SD_BBBBBBBB\n');
    expect(await answer).toEqual({
      studies: ['SD_AAAAAAAA', 'SD_BBBBBBBB'],
      expires_in: DEFAULT_EXPIRY_SECONDS,
    });
    expect(shown).toContain('Which studies may the token reach?');
    expect(shown).toContain('Study ids look like SD_ABCD1234; or type all.');

    const again = new PassThrough();
    const all = chooseDevToken({ expiry: false }, askOnTerminal(again, new PassThrough()));
    again.write('all\n');
    expect(await all).toEqual({});
  });
});

import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

/**
 * Headless Chromium from Debian's `chromium` package, driven by playwright-core (no browser is ever downloaded).
 * Without the background-networking flags Chromium tries to reach Google services, which this closed network
 * refuses. Playwright gives every launch a fresh temporary profile (user data dir). Used by the browser tests and
 * by `npm run bench:ui`.
 */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: install Debian's chromium package (apt-get install chromium)`);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  clientCredentials,
  type RunningTaskService,
  startTaskService,
} from '#examples/task-service/service.js';
import { freePort } from '#local/dynamodb-local.js';
import { TASK_SERVICE_AUDIENCE } from '#local/idp/clients.js';
import { type SpawnedStack, spawnStack } from '../helpers/spawned-stack.js';
import { checkedPages, expectAccessible, launchChromium, screenshot, tabTo } from './browser.js';

/**
 * The dashboard end to end, in headless Chromium, against `npm start` (bin/local.ts in a child process) and a real
 * HTTP task service (the reference one). The steps run in order and share the browser:
 *   1. sign in as an admin; 2. register a task service; 3. create a release; 4. watch its progress bars reach
 *   staged without reloading; 5. publish, and see published and its version; 5b. a release that is partly
 *   published: retry its publish, then cancel it, confirming in a dialog that lists what has already published,
 *   and see why it is not published again; 6. sign in as a reader, and see no
 *   publish or cancel buttons; 7. upload a file, and download it byte-identical.
 * Controls are reached and used with the keyboard (Tab, Enter, Space) wherever a person could; axe-core checks
 * every page. With SCREENSHOTS_DIR set (npm run screenshots) each page is also photographed.
 */
const STUDY = { id: 'SD_DYPMEHHF', name: 'Kids First: Ewing Sarcoma Genetic Susceptibility' };
const MiB = 1024 * 1024;

let stack: SpawnedStack;
let service: RunningTaskService;
let browser: Browser;
let admin: BrowserContext;
let page: Page;
let releaseId = '';

beforeAll(async () => {
  const servicePort = await freePort();
  stack = await spawnStack({
    POLL_SECONDS: '1',
    // As the CDK app deploys it: every task service bound to the client that acts for it.
    TASK_SERVICE_CLIENT_REQUIRED: 'true',
    // Uploads above 5 MiB go in 5 MiB parts, so a 6 MiB file exercises the multipart path in the browser.
    MULTIPART_THRESHOLD_BYTES: String(5 * MiB),
    MULTIPART_PART_SIZE_BYTES: String(5 * MiB),
  });
  service = await startTaskService(
    {
      name: 'stager',
      coordinatorUrl: stack.url.coordinator,
      callbackToken: clientCredentials(
        `${stack.url.idp}/oauth/token`,
        'task-service',
        'task-service-local-secret',
      ),
      // The coordinator's token is for the task services' audience, never the APIs'.
      auth: { mode: 'jwks', issuer: stack.url.idp, audience: [TASK_SERVICE_AUDIENCE] },
      // Long enough for the page to show the task running before it is staged, even on a busy machine.
      stageSeconds: 4,
      publishSeconds: 1,
      progressSteps: 3,
      failAt: [],
    },
    { port: servicePort, host: '127.0.0.1' },
  );
  browser = await launchChromium();
  admin = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await admin.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: stack.url.ui });
  page = await admin.newPage();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await service?.stop();
  await stack?.stop();
});

const api = async (path: string) => {
  const token = readFileSync(`${stack.dataDir}/admin-token`, 'utf8').trim();
  const res = await fetch(`${stack.url.coordinator}${path}`, {
    headers: { Authorization: `Bearer ${token}` },
  });
  return res.json() as Promise<Record<string, any>>;
};

/** A write with the admin token of the stack (what the dashboard's own steps do not cover). */
const apiWrite = async (method: string, path: string, body?: unknown) => {
  const token = readFileSync(`${stack.dataDir}/admin-token`, 'utf8').trim();
  const res = await fetch(`${stack.url.coordinator}${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  const text = await res.text();
  return (text ? JSON.parse(text) : {}) as Record<string, any>;
};

/** A link of the main navigation. */
const nav = (name: string) => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name });

/** The dev sign-in at the identity provider, typed with the keyboard. */
async function signIn(p: Page, who: { sub: string; roles: string; groups?: string }, shots = false) {
  await p.goto(stack.url.ui);
  const button = p.getByRole('button', { name: 'Sign in' });
  await button.waitFor();
  await expectAccessible(p, 'sign-in');
  if (shots) await screenshot(p, '01-sign-in');
  await tabTo(p, button);
  await p.keyboard.press('Enter');
  await p.waitForURL(`${stack.url.idp}/authorize?**`);
  await expectAccessible(p, 'identity provider sign-in form');
  if (shots) {
    await p.locator('input[name=sub]').fill(who.sub);
    await p.locator('input[name=roles]').fill(who.roles);
    await screenshot(p, '02-local-identity-provider');
    await p.locator('input[name=sub]').fill('');
    await p.locator('input[name=roles]').fill('');
  }
  await tabTo(p, p.locator('input[name=sub]'));
  await p.keyboard.type(who.sub);
  await p.keyboard.press('Tab');
  await p.keyboard.type(who.roles);
  await p.keyboard.press('Tab');
  await p.keyboard.type(who.groups ?? '');
  await p.keyboard.press('Enter');
  await p.waitForURL(`${stack.url.ui}/**`);
  await p.getByRole('heading', { level: 1, name: 'Releases' }).waitFor();
}

describe('the dashboard, end to end', () => {
  it('1. signs in as an admin with the authorization code flow, and shows who and which roles', async () => {
    await signIn(page, { sub: 'ada', roles: 'admin' }, true);
    const user = page.getByRole('region', { name: 'Signed-in user' });
    expect(await user.textContent()).toContain('ada');
    expect(await page.getByTestId('roles').textContent()).toBe('admin');
    await expectAccessible(page, 'releases (empty)');
  });

  it('1b. keeps no token in localStorage, stays signed in across a reload, and connects to the stack alone', async () => {
    const storage = () =>
      page.evaluate(() => ({
        local: Object.entries(localStorage),
        session: Object.entries(sessionStorage),
      }));
    const before = await storage();
    const response = await page.reload();
    await page.getByRole('region', { name: 'Signed-in user' }).waitFor();
    expect(await page.getByTestId('roles').textContent()).toBe('admin');
    const after = await storage();
    for (const { local, session } of [before, after]) {
      // Nothing of the sign-in in localStorage, whatever its key.
      expect(local.filter(([, v]) => /access_token|id_token|refresh_token|code_verifier/.test(v))).toEqual(
        [],
      );
      // The tab's user is in sessionStorage, without its refresh token (kept in memory only).
      const user = session.find(([k]) => k.startsWith('user:'));
      expect(user, JSON.stringify(session.map(([k]) => k))).toBeDefined();
      expect(JSON.parse(user![1]).access_token).toMatch(/^ey/);
      expect(JSON.parse(user![1]).refresh_token).toBeUndefined();
    }
    // The page may connect to its own origin, the two APIs, the identity provider and S3, and nowhere else.
    const csp = response?.headers()['content-security-policy'] ?? '';
    const connect = /connect-src ([^;]*)/.exec(csp)?.[1].trim().split(/\s+/);
    const origin = (u: string) => new URL(u).origin;
    const known = ["'self'", origin(stack.url.coordinator), origin(stack.url.files), origin(stack.url.idp)];
    expect(connect).toEqual(expect.arrayContaining(known));
    // The one more is S3 (s3rver), where uploads go straight.
    const rest = (connect ?? []).filter((c) => !known.includes(c));
    expect(rest).toHaveLength(1);
    expect(rest[0]).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('2. registers a task service, then disables and enables it, all from the keyboard', async () => {
    await tabTo(page, nav('Task services'));
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Task services' }).waitFor();
    await tabTo(page, page.getByLabel('Name'));
    await page.keyboard.type('stager');
    await page.keyboard.press('Tab');
    await page.keyboard.type(service.url);
    await page.keyboard.press('Tab');
    await page.keyboard.type('stages study data');
    // Past the author (the signed-in user's name), the client whose tokens report its tasks: the reference service
    // calls back with the task-service client's tokens, so steps 3 and 4 stage through the binding.
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    await page.keyboard.type('task-service');
    await page.keyboard.press('Enter');
    await page.getByText('Registered stager.').waitFor();

    // The signing secret, shown this once, with a copy button and a warning; the client field says it is required,
    // as this deployment binds every service to its client.
    const secrets = page.getByRole('region', { name: 'Secrets of stager' });
    const signing = secrets.getByRole('textbox', { name: 'Signing secret' });
    const secret = await signing.inputValue();
    expect(secret).toMatch(/^whsec_/);
    expect(await secrets.textContent()).toMatch(/Shown only now: .* It cannot be shown again\./);
    await tabTo(page, secrets.getByRole('button', { name: 'Copy signing secret' }));
    await page.keyboard.press('Enter');
    await secrets.getByText('Copied to the clipboard.').waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
    const client = page.getByLabel('OAuth client (required)');
    expect(await client.getAttribute('aria-required')).toBe('true');
    await expectAccessible(page, 'task services, a registration with its secret');
    await screenshot(page, '05b-task-service-secret');
    await tabTo(page, secrets.getByRole('button', { name: 'I have kept them' }));
    await page.keyboard.press('Enter');
    expect(await page.getByRole('region', { name: 'Secrets of stager' }).count()).toBe(0);

    const row = page.locator('tr[data-service=stager]');
    await row.waitFor();
    expect(await row.textContent()).toContain('acts as task-service');
    expect((await api('/task-services')).results[0].client_id).toBe('task-service');
    expect(await row.locator('[data-state]').first().getAttribute('data-state')).toBe('ok');
    const toggle = row.getByRole('switch', { name: 'stager enabled' });
    expect(await toggle.isChecked()).toBe(true);
    await tabTo(page, toggle);
    await page.keyboard.press('Space');
    await expect.poll(() => toggle.isChecked()).toBe(false);
    const services = await api('/task-services');
    expect(services.results[0].enabled).toBe(false);
    await page.keyboard.press('Space');
    await expect.poll(() => toggle.isChecked()).toBe(true);
    expect((await api('/task-services')).results[0].enabled).toBe(true);
    await expectAccessible(page, 'task services');
    await screenshot(page, '05-task-services');
  });

  it('2b. registers a service with a client of its own, whose secret is shown once beside the signing secret', async () => {
    await tabTo(page, page.getByLabel('Name'));
    await page.keyboard.type('client-maker');
    await page.keyboard.press('Tab');
    await page.keyboard.type(service.url);
    await tabTo(page, page.getByLabel('Create a client for it'));
    await page.keyboard.press('Space');
    // The client is made by the coordinator: no id to type, and none required.
    expect(await page.getByLabel('OAuth client (required)').isDisabled()).toBe(true);
    await tabTo(page, page.getByRole('button', { name: 'Register' }));
    await page.keyboard.press('Enter');
    const secrets = page.getByRole('region', { name: 'Secrets of client-maker' });
    await secrets.waitFor();
    const made = (await api('/task-services')).results.find((s: any) => s.name === 'client-maker');
    expect(made.client_id).toBeTruthy();
    expect(await secrets.textContent()).toContain(made.client_id);
    expect(await secrets.getByRole('textbox', { name: 'Signing secret' }).inputValue()).toMatch(/^whsec_/);
    const clientSecret = await secrets.getByRole('textbox', { name: 'Client secret' }).inputValue();
    // The secret gets that client its tokens: it is the client the service is bound to.
    const token = await fetch(`${stack.url.idp}/oauth/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: made.client_id,
        client_secret: clientSecret,
      }),
    });
    expect(token.status).toBe(200);
    // It would get tasks in the releases below, which its client cannot report on.
    const token2 = readFileSync(`${stack.dataDir}/admin-token`, 'utf8').trim();
    const removed = await fetch(`${stack.url.coordinator}/task-services/${made.kf_id}`, {
      method: 'DELETE',
      headers: { Authorization: `Bearer ${token2}` },
    });
    expect(removed.ok).toBe(true);
  });

  it('3. creates a release with a study picked from the searchable list', async () => {
    await tabTo(page, nav('Releases'));
    await page.keyboard.press('Enter');
    await tabTo(page, page.getByRole('link', { name: 'New release' }));
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'New release' }).waitFor();
    await page.getByRole('checkbox', { name: new RegExp(STUDY.name) }).waitFor();
    await expectAccessible(page, 'new release form');

    await tabTo(page, page.getByLabel('Name'));
    await page.keyboard.type('Spring release');
    await page.keyboard.press('Tab');
    await page.keyboard.type('Ewing sarcoma data, first pass');
    await tabTo(page, page.getByLabel('Search studies'));
    await page.keyboard.type('ewing');
    const study = page.getByRole('checkbox', { name: new RegExp(STUDY.name) });
    await expect.poll(() => page.locator('.pick-list li').count()).toBe(1);
    await tabTo(page, study);
    await page.keyboard.press('Space');
    expect(await study.isChecked()).toBe(true);
    await screenshot(page, '04-new-release');
    await tabTo(page, page.getByRole('button', { name: 'Create release' }));
    await page.keyboard.press('Enter');

    await page.waitForURL(/\/releases\/RE_[0-9A-Z]{8}$/);
    releaseId = page.url().split('/').pop() as string;
    const created = await api(`/releases/${releaseId}`);
    expect(created).toMatchObject({ name: 'Spring release', studies: [STUDY.id], is_major: false });
    expect(created.tasks).toHaveLength(1);
  });

  it('4. shows the progress bars reach staged, live, without reloading, polling with conditional requests', async () => {
    const statuses: number[] = [];
    page.on('response', (res) => {
      if (res.url().endsWith(`/releases/${releaseId}`) && res.request().method() === 'GET')
        statuses.push(res.status());
    });
    let navigations = 0;
    page.on('framenavigated', (f) => {
      if (f === page.mainFrame()) navigations++;
    });
    // Record every state and progress value the page shows, as it shows them.
    await page.evaluate(() => {
      const seen = { states: [] as string[], progress: [] as number[] };
      (window as unknown as { __seen: typeof seen }).__seen = seen;
      const record = () => {
        const state = document.querySelector<HTMLElement>('.headline [data-state]')?.dataset.state;
        if (state && seen.states.at(-1) !== state) seen.states.push(state);
        const bar = document.querySelector<HTMLProgressElement>('.task progress');
        if (bar && seen.progress.at(-1) !== bar.value) seen.progress.push(bar.value);
      };
      new MutationObserver(record).observe(document.body, {
        subtree: true,
        childList: true,
        attributes: true,
        characterData: true,
      });
      record();
    });
    const task = page.locator('.task');
    await task.locator('[data-state=staged]').waitFor({ timeout: 60_000 });
    await page.locator('.headline [data-state=staged]').waitFor({ timeout: 60_000 });
    expect(await task.locator('progress').evaluate((el) => (el as HTMLProgressElement).value)).toBe(100);
    expect(await task.locator('.task-name').textContent()).toBe('stager');

    const seen = await page.evaluate(
      () => (window as unknown as { __seen: { states: string[]; progress: number[] } }).__seen,
    );
    expect(seen.states.at(-1)).toBe('staged');
    expect(seen.states.indexOf('running')).toBeGreaterThanOrEqual(0);
    expect(seen.progress.at(-1)).toBe(100);
    expect(seen.progress).toEqual([...seen.progress].sort((a, b) => a - b));
    // The same document all along, kept fresh by polling; unchanged polls were answered 304 without a body.
    expect(navigations).toBe(0);
    // Staged, the release stops changing: the polls go on, answered 304.
    await expect
      .poll(() => statuses.filter((s) => s === 304).length, { timeout: 10_000 })
      .toBeGreaterThanOrEqual(2);
    await expect.poll(() => page.locator('.timeline li').count()).toBeGreaterThanOrEqual(4);
    await expectAccessible(page, 'release (staged)');
    await screenshot(page, '06-release-staged');
  }, 90_000);

  it('5. publishes after a confirmation, and shows published and the version', async () => {
    await tabTo(page, page.getByRole('button', { name: 'Publish' }));
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Publish Spring release?' });
    await dialog.waitFor();
    await expectAccessible(page, 'publish confirmation');
    await screenshot(page, '07-publish-confirmation', false);
    // Escape backs out; nothing is published.
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect((await api(`/releases/${releaseId}`)).state).toBe('staged');

    await tabTo(page, page.getByRole('button', { name: 'Publish' }));
    await page.keyboard.press('Enter');
    await dialog.waitFor();
    await tabTo(page, dialog.getByRole('button', { name: 'Publish' }));
    await page.keyboard.press('Enter');
    await page.locator('.headline [data-state=published]').waitFor({ timeout: 60_000 });
    const published = await api(`/releases/${releaseId}`);
    expect(published.state).toBe('published');
    await expect.poll(() => page.locator('.version strong').textContent()).toBe(published.version);
    expect(await page.getByRole('button', { name: 'Publish' }).isDisabled()).toBe(true);
    expect(await page.getByRole('button', { name: 'Cancel release' }).isDisabled()).toBe(true);
    await expectAccessible(page, 'release (published)');
    await screenshot(page, '08-release-published');

    // The release list shows it with its badge; the study shows it in its timeline.
    await tabTo(page, nav('Releases'));
    await page.keyboard.press('Enter');
    const row = page.getByRole('row', { name: /Spring release/ });
    await row.locator('[data-state=published]').waitFor();
    await expectAccessible(page, 'releases');
    await screenshot(page, '03-releases');
  });

  it('5b. shows a partly published release as such: retries its publish, then cancels it only after a dialog that lists what has published', async () => {
    // A second service that takes an hour to publish: once the stager has published, the release stays publishing.
    const slow = await startTaskService(
      {
        name: 'slow publisher',
        coordinatorUrl: stack.url.coordinator,
        callbackToken: clientCredentials(
          `${stack.url.idp}/oauth/token`,
          'task-service',
          'task-service-local-secret',
        ),
        auth: { mode: 'jwks', issuer: stack.url.idp, audience: [TASK_SERVICE_AUDIENCE] },
        stageSeconds: 1,
        publishSeconds: 3600,
        progressSteps: 1,
        failAt: [],
      },
      { port: 0, host: '127.0.0.1' },
    );
    let slowId = '';
    try {
      slowId = (
        await apiWrite('POST', '/task-services', {
          name: 'slow publisher',
          url: slow.url,
          description: 'publishes slowly',
          author: 'tests',
          client_id: 'task-service',
        })
      ).item_id;
      const id = (await apiWrite('POST', '/releases', { name: 'Autumn release', studies: [STUDY.id] }))
        .item_id;
      const stateOf = async () => (await api(`/releases/${id}`)).state;
      await expect.poll(stateOf, { timeout: 60_000 }).toBe('staged');
      await apiWrite('POST', `/releases/${id}/publish`);
      const taskStates = async () =>
        Object.fromEntries((await api(`/releases/${id}`)).tasks.map((t: any) => [t.service_name, t.state]));
      await expect
        .poll(taskStates, { timeout: 60_000 })
        .toEqual({ stager: 'published', 'slow publisher': 'publishing' });

      await page.goto(`${stack.url.ui}/releases/${id}`);
      await page.locator('.headline [data-state=publishing]').waitFor();
      // Shown as partly published, with the action that finishes a stuck publish.
      const partly = page.getByTestId('partly-published');
      expect(await partly.textContent()).toContain(
        '1 of 2 task(s) have published (stager); not yet: slow publisher.',
      );
      await tabTo(page, partly.getByRole('button', { name: 'Retry publish' }));
      await page.keyboard.press('Enter');
      const retry = page.getByRole('dialog', { name: 'Retry the publish of Autumn release?' });
      await retry.waitFor();
      expect(await retry.textContent()).toContain('Publish is sent again to slow publisher');
      await expectAccessible(page, 'retry publish confirmation');
      await tabTo(page, retry.getByRole('button', { name: 'Retry publish' }));
      await page.keyboard.press('Enter');
      await page.getByText('Publish sent again to the tasks that have not published.').waitFor();
      const messages = async () =>
        (await api(`/events?release=${id}&limit=100`)).results.map((e: any) => e.message).join('\n');
      await expect.poll(messages, { timeout: 30_000 }).toMatch(/publish sent again to 1 task\(s\)/);
      await tabTo(page, page.getByRole('button', { name: 'Cancel release' }));
      await page.keyboard.press('Enter');
      const dialog = page.getByRole('dialog', { name: 'Cancel Autumn release?' });
      await dialog.waitFor();
      // The operator sees what the cancel would undo before confirming it.
      expect(await dialog.getByTestId('already-published').textContent()).toContain('stager');
      expect(await dialog.textContent()).toContain('1 of 2 task(s) have already published');
      expect(await dialog.textContent()).toContain('Still publishing: slow publisher.');
      await expectAccessible(page, 'cancel confirmation (publishing)');
      await screenshot(page, '12-cancel-publishing-confirmation', false);
      await tabTo(page, dialog.getByRole('button', { name: 'Cancel release' }));
      await page.keyboard.press('Enter');
      await page.locator('.headline [data-state=canceled]').waitFor({ timeout: 60_000 });
      // Still partly published, and said so, with why it is not published again: no retry any more.
      await expect
        .poll(async () => partly.textContent(), { timeout: 30_000 })
        .toContain('the release ended canceled');
      expect(await partly.textContent()).toContain('It is not published again');
      expect(await partly.getByRole('button', { name: 'Retry publish' }).count()).toBe(0);
      await expectAccessible(page, 'release (partly published, canceled)');
      // What published stays on record as published; the release never got a version of its own.
      expect(await taskStates()).toEqual({ stager: 'published', 'slow publisher': 'canceled' });
      const events = (await api(`/events?release=${id}&limit=100`)).results.map((e: any) => e.message);
      expect(events.some((m: string) => m.includes('had already published; cancel was sent'))).toBe(true);
    } finally {
      if (slowId) await apiWrite('PATCH', `/task-services/${slowId}`, { enabled: false });
      await slow.stop();
    }
  }, 120_000);

  it('6. a reader sees the release but no publish or cancel button, nor any other admin action', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      const reader = await context.newPage();
      await signIn(reader, { sub: 'rita', roles: '' });
      expect(await reader.getByTestId('roles').textContent()).toBe('reader');
      expect(await reader.getByRole('link', { name: 'New release' }).count()).toBe(0);
      await reader.getByRole('link', { name: 'Spring release' }).click();
      await reader.locator('.headline [data-state=published]').waitFor();
      expect(await reader.getByRole('button', { name: 'Publish' }).count()).toBe(0);
      expect(await reader.getByRole('button', { name: 'Cancel release' }).count()).toBe(0);
      expect(await reader.getByRole('button', { name: 'Add note' }).count()).toBe(0);
      await expectAccessible(reader, 'release (reader)');
      await reader.getByRole('link', { name: 'Task services' }).click();
      await reader.locator('tr[data-service=stager]').waitFor();
      expect(await reader.getByRole('switch').count()).toBe(0);
      expect(await reader.getByRole('heading', { name: 'Register a task service' }).count()).toBe(0);
      await expectAccessible(reader, 'task services (reader)');
      // Not a member of the study: its files are not shown, and no upload is offered.
      await reader.goto(`${stack.url.ui}/studies/${STUDY.id}/files`);
      await reader.getByText(`Only administrators and members of ${STUDY.id}`).waitFor();
      expect(await reader.getByRole('button', { name: 'Choose files…' }).count()).toBe(0);
      await expectAccessible(reader, 'study files (reader, not a member)');
    } finally {
      await context.close();
    }
  });

  it('7. uploads files (drag and drop; multipart from the file picker) and downloads them byte-identical', async () => {
    await tabTo(page, nav('Studies'));
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Studies' }).waitFor();
    const studyRow = page.getByRole('row', { name: new RegExp(STUDY.name) });
    expect(await studyRow.getByRole('cell').nth(1).textContent()).toBe(
      (await api(`/studies/${STUDY.id}`)).last_pub_version,
    );
    await expectAccessible(page, 'studies');
    await screenshot(page, '09-studies');
    await tabTo(page, page.getByRole('link', { name: STUDY.name, exact: true }));
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: STUDY.name }).waitFor();
    await page.getByRole('link', { name: 'Spring release' }).waitFor();
    await expectAccessible(page, 'study');
    await screenshot(page, '10-study');
    await tabTo(page, page.getByRole('link', { name: 'Files' }).last());
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: `Files of ${STUDY.name}` }).waitFor();
    await expectAccessible(page, 'study files (empty)');

    // A small file, dropped on the drop zone: one presigned PUT.
    const small = Buffer.from(`gene\tcount\n${randomBytes(600).toString('hex')}\n`);
    const dataTransfer = await page.evaluateHandle((b64) => {
      const dt = new DataTransfer();
      const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      dt.items.add(new File([bytes], 'genes.tsv', { type: 'text/tab-separated-values' }));
      return dt;
    }, small.toString('base64'));
    await page.dispatchEvent('[data-testid=dropzone]', 'drop', { dataTransfer });
    const smallCard = page.locator('section[data-file="genes.tsv"]');
    await smallCard.locator('[data-state=available]').waitFor({ timeout: 30_000 });

    // A 6 MiB file from the file picker, opened with the keyboard: two parts, each PUT to S3 with its progress.
    const large = randomBytes(6 * MiB);
    const chooser = page.waitForEvent('filechooser');
    await tabTo(page, page.getByRole('button', { name: 'Choose files…' }));
    await page.keyboard.press('Enter');
    await (await chooser).setFiles({
      name: 'reads.bin',
      mimeType: 'application/octet-stream',
      buffer: large,
    });
    const largeCard = page.locator('section[data-file="reads.bin"]');
    await largeCard.locator('[data-state=available]').waitFor({ timeout: 60_000 });
    const upload = page.locator('li[data-upload="reads.bin"]');
    expect(await upload.locator('.upload-phase').textContent()).toBe('Uploaded');
    expect(await upload.locator('progress').evaluate((el) => (el as HTMLProgressElement).value)).toBe(100);
    const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
    expect(await largeCard.locator('code.sha').textContent()).toBe(sha(large));
    expect(await largeCard.getByRole('cell', { name: '6.0 MiB' }).count()).toBe(1);
    await expectAccessible(page, 'study files');

    // Downloads: the small one straight from the API, the large one redirected to S3.
    for (const [card, bytes] of [
      [smallCard, small],
      [largeCard, large],
    ] as const) {
      const download = page.waitForEvent('download');
      await tabTo(page, card.getByRole('button', { name: /^Download / }));
      await page.keyboard.press('Enter');
      const path = await (await download).path();
      expect(sha(readFileSync(path))).toBe(sha(bytes));
    }

    // A signed URL, copied to the clipboard, with its expiry shown.
    await tabTo(page, smallCard.getByRole('button', { name: /^Copy signed URL/ }));
    await page.keyboard.press('Enter');
    const link = smallCard.getByLabel('Signed URL (single use)');
    await link.waitFor();
    const url = await link.inputValue();
    expect(url).toMatch(
      new RegExp(
        `^${stack.url.files}/download/study/${STUDY.id}/file/SF_[0-9A-Z]{8}/version/FV_[0-9A-Z]{8}\\?token=sfsu_`,
      ),
    );
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(url);
    expect(await smallCard.getByText(/Copied to the clipboard/).count()).toBe(1);
    expect(await smallCard.getByText(/Expires at .* \(in \d+ s\)/).count()).toBe(1);
    const viaLink = await fetch(url);
    expect(Buffer.from(await viaLink.arrayBuffer()).equals(small)).toBe(true);
    await screenshot(page, '11-study-files');
  }, 120_000);

  it('ran axe on every page of the dashboard', () => {
    expect(new Set(checkedPages)).toEqual(
      new Set([
        'sign-in',
        'identity provider sign-in form',
        'releases (empty)',
        'task services, a registration with its secret',
        'task services',
        'new release form',
        'release (staged)',
        'publish confirmation',
        'release (published)',
        'cancel confirmation (publishing)',
        'retry publish confirmation',
        'release (partly published, canceled)',
        'releases',
        'release (reader)',
        'task services (reader)',
        'study files (reader, not a member)',
        'studies',
        'study',
        'study files (empty)',
        'study files',
      ]),
    );
  });
});

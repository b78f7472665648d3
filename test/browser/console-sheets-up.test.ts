// The web console of `retrokube sheets up` (Sheeternetes without Oberon), in Debian's chromium: the
// real CLI in its own process runs the apiserver over a real workbook, two real node agents and the
// console, with a signing key (every POST signed: the agents' and the console's). The page shows
// the tabs as live tables, the events and a plot of the Metrics tab; its controls change the sheet
// (scale, cordon, the skctl box, stopping and starting a node agent); two pages steering at once
// both see every change and the cluster ends where they left it; a page of another origin is
// refused; a server restart under an open page shows a message and the page recovers by itself.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { SheetsTabs } from '../../operator/src/console/types.ts';
import { SheetsClient } from '../../operator/src/sheets/ctl/client.ts';
import { DEFAULT_TOKEN } from '../../operator/src/sheets/default-token.ts';
import {
  consoleErrors,
  foreignOriginTries,
  linkDownMessage,
  openPage,
  pageSession,
  pollUntil,
  readJson,
  shot,
  statusUnderForeignHost,
  waitForRows,
} from './chromium.ts';
import { type Cli, startCli } from './cli-process.ts';

const dir = mkdtempSync(join(tmpdir(), 'retrokube-console-sheets-up-'));
const KEY = randomBytes(24).toString('hex');

const startSheetsUp = (consolePort = 0): Promise<Cli> =>
  startCli(
    [
      'sheets',
      'up',
      '--nodes',
      '2',
      '--port',
      '0',
      '--workbook',
      join(dir, 'cluster.xlsx'),
      '--wait',
      '0',
      '--console-port',
      String(consolePort),
    ],
    'running; try',
    { env: { SIGNING_KEY: KEY, TOKEN: DEFAULT_TOKEN } },
  );

const s = pageSession(() => startSheetsUp(), {
  linkTimeoutMs: 30_000,
  cleanup: () => rmSync(dir, { recursive: true, force: true }),
});

const sheets = (): Promise<SheetsTabs> => readJson<SheetsTabs>(s.server.url, 'api/sheets');
/** The apiserver itself, read as skctl would (GETs carry the token; only POSTs are signed). */
const apiserver = (): SheetsClient => {
  const m = /apiserver listening on (\S+)/.exec(s.server.log());
  if (!m) throw new Error(`sheets up printed no apiserver URL:\n${s.server.log()}`);
  return new SheetsClient({ url: m[1], token: DEFAULT_TOKEN });
};
const running = (t: SheetsTabs, deployment: string): number =>
  (t.tabs.pods ?? []).filter((p) => p.deployment === deployment && p.phase === 'Running').length;
const nodeRow = (t: SheetsTabs, name: string) => (t.tabs.nodes ?? []).find((n) => n.name === name);

describe.sequential('the web console of retrokube sheets up, in chromium', () => {
  it('shows the tabs as live tables, the events and a plot of the Metrics tab; no Oberon, no secrets', async () => {
    await s.page.waitForSelector('#sheets:not([hidden])', { timeout: 30_000 });
    expect(await s.page.locator('#title').textContent()).toContain('Sheeternetes');
    expect(await s.page.locator('#kube').isHidden()).toBe(true); // no machines, no air: nothing of Oberon
    // The agents register, the scheduler places the samples on them, the agents report Running.
    await waitForRows(s.page, 'nodes', { status: 'Ready' }, 2);
    await waitForRows(s.page, 'pods', { deployment: 'ticker', phase: 'Running' }, 2);
    await s.page.waitForFunction(
      () => Number(document.querySelector<SVGElement>('#sheets-body svg.plot')?.dataset.points ?? 0) >= 2,
      null,
      { timeout: 90_000, polling: 1000 }, // Metrics samples come every 15 s
    );
    const text = (await s.page.locator('#sheets-body').textContent()) ?? '';
    expect(text).not.toMatch(/secrets/i); // Secrets never reach a screen
    expect(await s.page.locator('#sheets-body pre').textContent()).toMatch(/scheduled to node-/);
    expect(await s.page.content()).not.toContain(KEY); // nor the signing key
    await shot(s.page, 'sheets-up-start');
  });

  it('reads well at 1400 px and on a phone: ages, short digests, a plot per unit, an icon, no console errors (#29.9)', async () => {
    const widest = () => s.page.evaluate(() => document.documentElement.scrollWidth);
    // Heartbeats as ages, like the terminal; the exact cell on hover.
    await s.page.waitForFunction(
      () => {
        const t = document.querySelector('table[data-tab="nodes"]');
        const col = [...(t?.querySelectorAll('thead th') ?? [])].findIndex(
          (th) => th.textContent === 'last_heartbeat',
        );
        const cells = [...(t?.querySelectorAll('tbody tr') ?? [])].map((tr) => tr.children[col]);
        return (
          cells.length > 0 &&
          cells.every(
            (c) => /^\d+s ago$/.test(c?.textContent ?? '') && /^\d+$/.test((c as HTMLElement).title),
          )
        );
      },
      null,
      { timeout: 15_000 },
    );
    // No cell shows a whole digest: 12 hex digits and the rest on hover.
    const digests = await s.page.$$eval('table[data-tab="images"] td', (tds) =>
      tds.map((td) => [td.textContent ?? '', (td as HTMLElement).title]),
    );
    expect(digests.some(([, title]) => /[0-9a-f]{64}/.test(title))).toBe(true);
    expect(digests.filter(([text]) => /[0-9a-f]{64}/.test(text))).toEqual([]);
    // The Metrics plot: a panel per unit, each with its own labelled axis.
    const units = await s.page.$$eval('#sheets-body svg.plot', (svgs) =>
      svgs.map((e) => (e as SVGElement).dataset.unit),
    );
    expect(units).toEqual(expect.arrayContaining(['pods', 'nodes', 'millicores', 'MiB']));
    expect(await widest()).toBeLessThanOrEqual(1400);
    const icon = await fetch(new URL('favicon.ico', s.server.url));
    expect([icon.status, icon.headers.get('content-type')]).toEqual([200, 'image/svg+xml']);
    await s.page.setViewportSize({ width: 390, height: 844 });
    await s.page.waitForTimeout(2500); // a redraw at the new width
    expect(await widest()).toBeLessThanOrEqual(390);
    await shot(s.page, 'sheets-up-phone');
    await s.page.setViewportSize({ width: 1400, height: 1100 });
    expect(consoleErrors(s.page)).toEqual([]);
  });

  it('changes the sheet from the page: scale, cordon and the skctl box, each through the signed contract', async () => {
    await s.page.selectOption('#sheets-deployment', 'ticker');
    await s.page.fill('#sheets-replicas', '3');
    await s.page.click('#sheets-scale');
    await waitForRows(s.page, 'deployments', { name: 'ticker', replicas: '3' });
    expect(String((await apiserver().get('deployments')).find((d) => d.name === 'ticker')?.replicas)).toBe(
      '3',
    );
    const t = await pollUntil(sheets, (x) => running(x, 'ticker') === 3, 90_000);
    expect(running(t, 'ticker')).toBe(3);
    await waitForRows(s.page, 'pods', { deployment: 'ticker', phase: 'Running' }, 3);
    // Cordon with the node buttons; uncordon through the skctl box.
    await s.page.selectOption('#sheets-node', 'node-b');
    await s.page.click('button.sheets-node-op[data-op="cordon"]');
    await pollUntil(
      sheets,
      (x) => String(nodeRow(x, 'node-b')?.schedulable).toLowerCase() === 'false',
      30_000,
    );
    await s.page.fill('#sheets-command', 'uncordon node-b');
    await s.page.press('#sheets-command', 'Enter');
    const u = await pollUntil(
      sheets,
      (x) => String(nodeRow(x, 'node-b')?.schedulable).toLowerCase() === 'true',
      30_000,
    );
    expect(String(nodeRow(u, 'node-b')?.schedulable).toLowerCase()).toBe('true');
    // Bad input: a clear message in red, nothing changed, the box keeps the text to fix.
    await s.page.fill('#sheets-command', 'scale nosuch 2');
    await s.page.press('#sheets-command', 'Enter');
    await s.page.waitForSelector('#notices .bad', { timeout: 15_000 });
    expect(await s.page.locator('#notices .bad').first().textContent()).toMatch(/not found/);
    expect(await s.page.inputValue('#sheets-command')).toBe('scale nosuch 2');
    expect(await s.page.locator('#notices .bad').first().textContent()).toContain('no deployment "nosuch"');
    // Sent anyway (a script, another client), the console answers 404 with the same words.
    const r = await s.page.evaluate(async () => {
      const x = await fetch('/api/sheets', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ op: 'command', text: 'scale nosuch 2' }),
      });
      return [x.status, ((await x.json()) as { error: string }).error];
    });
    expect(r[0]).toBe(404);
    expect(r[1]).toMatch(/not found/);
    consoleErrors(s.page).splice(0); // that deliberate 404 is the one failed load the page saw
    await s.page.fill('#sheets-command', 'apply {"secrets":[{"name":"x","data":"y"}]}');
    await s.page.press('#sheets-command', 'Enter');
    await s.page.waitForFunction(
      () => /Secrets never travel/.test(document.querySelector('#notices')?.textContent ?? ''),
      null,
      {
        timeout: 15_000,
      },
    );
    await shot(s.page, 'sheets-up-steered');
    expect(consoleErrors(s.page)).toEqual([]);
  });

  it('two pages steer one cluster: a scale raced by stopping a node agent ends settled, both pages see it', async () => {
    const other = await openPage(s.browser, s.server.url, 30_000);
    await other.waitForSelector('#sheets-controls:not([hidden])', { timeout: 30_000 });
    // Page 1 scales ticker to 4 while page 2 stops node-a's agent at the same moment.
    await s.page.selectOption('#sheets-deployment', 'ticker');
    await s.page.fill('#sheets-replicas', '4');
    await other.selectOption('#sheets-node', 'node-a');
    await Promise.all([s.page.click('#sheets-scale'), other.click('#sheets-agent')]);
    // Each page sees the other's action.
    await s.page.waitForFunction(
      () => /node agent node-a stopped/.test(document.querySelector('#notices')?.textContent ?? ''),
      null,
      {
        timeout: 30_000,
      },
    );
    await other.waitForFunction(
      () => /scale ticker 4/.test(document.querySelector('#notices')?.textContent ?? ''),
      null,
      {
        timeout: 30_000,
      },
    );
    await waitForRows(s.page, 'deployments', { name: 'ticker', replicas: '4' });
    expect((await sheets()).agents).toContainEqual({ name: 'node-a', on: false });
    await s.page.selectOption('#sheets-node', 'node-a');
    await s.page.waitForFunction(
      () => /start node-a's agent/.test(document.querySelector('#sheets-agent')?.textContent ?? ''),
      null,
      {
        timeout: 15_000,
      },
    );
    // Page 1 starts the agent again: the cluster settles on 4 running tickers with both nodes Ready.
    await s.page.click('#sheets-agent');
    const done = (x: SheetsTabs) =>
      running(x, 'ticker') === 4 &&
      (x.agents ?? []).every((a) => a.on) &&
      ['node-a', 'node-b'].every((n) => nodeRow(x, n)?.status === 'Ready');
    const end = await pollUntil(sheets, done, 180_000);
    // Both pages show it: the second page's own table, not only the server.
    await waitForRows(other, 'pods', { deployment: 'ticker', phase: 'Running' }, 4, 30_000);
    await waitForRows(s.page, 'pods', { deployment: 'ticker', phase: 'Running' }, 4, 30_000);
    await shot(other, 'sheets-up-second-page');
    await other.close();
    expect(done(end), JSON.stringify({ running: running(end, 'ticker'), agents: end.agents })).toBe(true);
  });

  it('refuses a page from another origin (Origin) and a request naming another host (Host)', async () => {
    const title = await foreignOriginTries(s.browser, s.server.url, {
      path: 'api/sheets',
      body: { op: 'agent', node: 'node-a', on: false },
    });
    expect(title).toContain('ws refused');
    expect((await sheets()).agents).toContainEqual({ name: 'node-a', on: true }); // nothing was stopped
    expect(await statusUnderForeignHost(s.server.url, '/api/sheets')).toBe(403);
  });

  it('says clearly when the server goes away, and recovers when it returns', async () => {
    const port = Number(new URL(s.server.url).port);
    await s.server.stop();
    expect(await linkDownMessage(s.page)).toMatch(/the console server went away/);
    await s.page.waitForTimeout(3000); // retries at 0.5, 1 and 2 s fail meanwhile: the page still says why
    expect(await s.page.locator('#link').textContent()).toMatch(/went away.*still trying/);
    // The banner stays in view wherever the page is scrolled.
    await s.page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
    const box = await s.page.locator('#link').boundingBox();
    expect(box && box.y >= 0 && box.y < 100, JSON.stringify(box)).toBe(true);
    const restartedAt = Date.now();
    await shot(s.page, 'sheets-up-server-gone');
    // The same workbook, the same console port: the open page finds it again by itself.
    s.server = await startSheetsUp(port);
    await s.page.waitForSelector('#link.up', { timeout: 60_000 });
    await waitForRows(s.page, 'deployments', { name: 'ticker', replicas: '4' }); // the sheet kept what the page did
    const back = await pollUntil(sheets, (x) => running(x, 'ticker') === 4, 120_000);
    expect(running(back, 'ticker')).toBe(4);
    await waitForRows(s.page, 'pods', { deployment: 'ticker', phase: 'Running' }, 4, 120_000);
    // The events panel shows this run's events only (the workbook keeps the earlier run's).
    const events = ((await s.page.locator('#sheets-body pre.events').textContent()) ?? '').split('\n');
    const times = events.map((l) => Date.parse(l.split(' ')[0])).filter((t) => Number.isFinite(t));
    expect(
      times.every((t) => t >= restartedAt - 2000),
      events.join('\n'),
    ).toBe(true);
    expect(await s.page.locator('#sheets-body').textContent()).toMatch(
      /\d+ events of earlier runs not shown/,
    );
    await shot(s.page, 'sheets-up-server-back');
  });
});

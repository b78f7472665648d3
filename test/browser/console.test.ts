// The web console of `retrokube up`, in a real browser (Debian's chromium driven by
// playwright-core): the real CLI in its own process runs a plane and two emulated machines on a
// real UDP air; the page shows their screens over RFB, runs the six labs, types into a machine's
// screen, refuses pages of other origins, and says so when the server goes away and comes back.
// Every judgement is made from the air, by the page or by the console's own listener.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ClusterView } from '../../operator/src/air/view.ts';
import {
  consoleErrors,
  fitProblems,
  foreignOriginTries,
  linkDownMessage,
  openPage,
  pageSession,
  pollUntil,
  readJson,
  runAllLabs,
  screenHasInk,
  shot,
  statusUnderForeignHost,
  typeIntoScreen,
  waitConverged,
} from './chromium.ts';
import { type Cli, startUp } from './cli-process.ts';

const dir = mkdtempSync(join(tmpdir(), 'retrokube-console-e2e-'));
const FILE = join(dir, 'lab.yaml');
writeFileSync(
  FILE,
  `apiVersion: retrokube.io/v1alpha1
kind: OberonKube
metadata:
  name: lab
spec:
  nodes: 2
  cluster: kube
  deployments: "web 4 Ticker"
`,
);

const startConsoleUp = (consolePort = 0): Promise<Cli> =>
  startUp(
    [FILE, '--state', join(dir, 'state'), '--console-port', String(consolePort)],
    'deployments ensured',
  );

const s = pageSession(() => startConsoleUp(), {
  startTimeoutMs: 240_000,
  linkTimeoutMs: 30_000,
  cleanup: () => rmSync(dir, { recursive: true, force: true }),
});

const view = (): Promise<ClusterView> => readJson<ClusterView>(s.server.url, 'api/view');

describe.sequential('the web console of retrokube up, in chromium', () => {
  it('shows every machine screen live over RFB and the cluster converged as heard on the air', async () => {
    await waitConverged(s.page, 180_000);
    for (const m of ['plane', 'node-a', 'node-b'])
      await s.page.waitForFunction(screenHasInk, m, { timeout: 60_000, polling: 500 });
    expect(await s.page.locator('#nodes tbody tr').count()).toBe(2);
    // The frame log fills from the event socket as frames are heard (a heartbeat a second per
    // machine); the view may say CONVERGED before the first frames reach the page.
    await s.page.waitForFunction(() => document.querySelectorAll('#log div').length > 5, null, {
      timeout: 30_000,
    });
    await shot(s.page, 'console-start');
  });

  it('fits a 1400 px window and a 390 px phone: screens scaled as the caption says or 1:1, every control reachable (#29.9)', async () => {
    const screens = () => s.page.locator('span.scale').allTextContents();
    const plane = s.page.locator('canvas[data-machine="plane"]');
    const zoom = s.page.locator('#machine-plane button.zoom');
    for (const [width, height, fitted] of [
      [1400, 1100, 'shown at 50 %'], // three 512-px screens, two to a row
      [390, 844, /^shown at \d\d %$/], // one to a row, as wide as the phone
    ] as const) {
      await s.page.setViewportSize({ width, height });
      await s.page.waitForTimeout(1000); // a redraw at the new width
      expect(await s.page.evaluate(fitProblems), `at ${width} px`).toEqual([]);
      for (const label of await screens()) expect(label).toMatch(fitted);
      // 1:1: every pixel of the screen; where the window is narrower, the frame scrolls, not the page.
      await zoom.click();
      expect((await plane.boundingBox())?.width).toBe(1024);
      expect(await s.page.evaluate(fitProblems), `at ${width} px, 1:1`).toEqual([]);
      expect((await screens())[0]).toBe(width < 1100 ? '1:1, scroll inside the frame' : '1:1');
      await shot(s.page, `console-${width}-one-to-one`);
      await zoom.click();
    }
    await s.page.setViewportSize({ width: 1400, height: 1100 });
    const icon = await fetch(new URL('favicon.ico', s.server.url));
    expect(icon.status).toBe(200);
    expect(consoleErrors(s.page)).toEqual([]);
  });

  it('refuses a page from another origin (Origin) and a request naming another host (Host)', async () => {
    // A page on another port of the same machine is another origin: it tries to switch the air off.
    const title = await foreignOriginTries(s.browser, s.server.url, { path: 'api/air', body: { op: 'off' } });
    expect(title).toContain('ws refused');
    const state = await readJson<{ air: { on: boolean } }>(s.server.url, 'api/state');
    expect(state.air.on).toBe(true); // whatever the browser let through, the console did nothing
    // DNS rebinding: the right address under another name.
    const status = await statusUnderForeignHost(s.server.url, '/api/state');
    expect(status).toBe(403);
  });

  it('passes the six labs, judged from the air', async () => {
    const statuses = await runAllLabs(s.page, 'console-labs');
    expect(statuses, statuses.join('\n')).toEqual(statuses.map(() => expect.stringMatching(/^PASS/)));
    expect(await s.page.locator('#labs-summary').textContent()).toBe('6/6 labs passed');
  });

  it('typing a command into the plane screen through the page changes what the air hears', async () => {
    await typeIntoScreen(s.page, 'plane', 'Kube.Apply web 5 Ticker2');
    // The labs left web at 4 × Ticker2: the typed line scales it to 5 (no rollout, so 5 is final).
    const done = (x: ClusterView) =>
      x.converged &&
      x.running === 5 &&
      x.pods.every((p) => p.runningOn.length === 0 || p.image === 'Ticker2');
    const v = await pollUntil(view, done, 90_000);
    await shot(s.page, 'console-typed');
    expect(done(v), JSON.stringify({ converged: v.converged, running: v.running })).toBe(true);
  });

  it('two pages steer one cluster: a rollout raced by a power cut ends converged, both pages see it', async () => {
    const other = await openPage(s.browser, s.server.url, 30_000);
    // Page 1 starts a rolling update through the command box; page 2 pulls node-a's plug at once.
    await s.page.fill('#command', 'Kube.Apply web 4 Ticker');
    await s.page.click('#command-form button');
    await other.click('#machine-node-a button.power');
    await s.page.waitForSelector('#machine-node-a.off', { timeout: 10_000 }); // page 1 sees page 2's action
    expect(await s.page.locator('#notices').textContent()).toContain('node-a switched off');
    await other.waitForTimeout(3000);
    await other.click('#machine-node-a button.power');
    await s.page.waitForSelector('#machine-node-a:not(.off)', { timeout: 30_000 });
    const done = (x: ClusterView) =>
      x.converged &&
      x.readyNodes === 2 &&
      x.running === 4 &&
      x.pods.every((p) => p.runningOn.length === 0 || p.image === 'Ticker');
    const v = await pollUntil(view, done, 180_000);
    await shot(other, 'console-second-page');
    await other.close();
    expect(done(v), JSON.stringify({ converged: v.converged, ready: v.readyNodes, running: v.running })).toBe(
      true,
    );
  });

  it('says clearly when the server goes away, and recovers when it returns', async () => {
    const port = Number(new URL(s.server.url).port);
    await s.server.stop();
    expect(await linkDownMessage(s.page)).toMatch(/the console server went away/);
    await shot(s.page, 'console-server-gone');
    s.server = await startConsoleUp(port);
    await s.page.waitForSelector('#link.up', { timeout: 60_000 });
    await waitConverged(s.page, 180_000);
    await s.page.waitForFunction(screenHasInk, 'plane', { timeout: 60_000, polling: 500 });
    await shot(s.page, 'console-server-back');
  });
});

// The browser lab alone, in a real browser (Debian's chromium, playwright-core): `retrokube lab`
// serves the page once; a plane and two nodes then run in Web Workers of the page on an air in the
// page. The machines run at real speed (the heartbeat the air hears is Oberon's 1-s period in wall
// time: no time-scale trick), the six labs pass, typing into a screen changes what the air hears,
// and the page keeps working with the server gone (nothing is fetched after the load) — and in a
// background tab of a chromium that throttles hidden pages, its machines keep their pace.
import { describe, expect, it } from 'vitest';
import type { FrameRecord } from '../../operator/src/air/view.ts';
import { serveLab } from '../../operator/src/console/lab.ts';
import {
  launchThrottling,
  pageSession,
  pollUntil,
  runAllLabs,
  screenHasInk,
  shot,
  typeIntoScreen,
  waitConverged,
} from './chromium.ts';

// A chromium that throttles hidden pages (the other browser tests' never does): one test puts the
// lab behind another tab.
const s = pageSession(
  async () => {
    const lab = await serveLab();
    return { ...lab, stop: lab.close };
  },
  { browser: launchThrottling },
);

const summary = async (): Promise<string> => (await s.page.locator('#summary').textContent()) ?? '';

/** The page's clock when it heard each good heartbeat of `node` (the records its air keeps). */
const beats = (node: string): Promise<number[]> =>
  s.page.evaluate(
    (n) =>
      (globalThis as unknown as { retrokubeRecords: () => FrameRecord[] })
        .retrokubeRecords()
        .filter((r) => r.kind === 'heartbeat' && r.node === n && r.verdict === 'ok')
        .map((r) => r.t),
    node,
  );

/** The median gap between successive times, in seconds. */
function medianGap(times: number[]): number {
  const gaps = times
    .slice(1)
    .map((t, i) => (t - times[i]) / 1000)
    .sort((a, b) => a - b);
  return gaps[Math.floor(gaps.length / 2)];
}

/** How long the lab stays behind another tab (past the grace period launchThrottling gives intensive throttling). */
const HIDDEN_MS = 20_000;

describe.sequential('the browser lab, in chromium', () => {
  it('boots a plane and two nodes in the page and forms the cluster on the in-page air', async () => {
    await waitConverged(s.page, 300_000);
    for (const m of ['plane', 'node-a', 'node-b'])
      await s.page.waitForFunction(screenHasInk, m, { timeout: 60_000, polling: 500 });
    expect(await summary()).toMatch(/nodes 2\/2 Ready · pods running 4/);
    await shot(s.page, 'lab-start');
  });

  it('keeps going with the server gone: everything it needs came with the page', async () => {
    await s.server.stop();
    const frames = async () =>
      Number(/frames (\d+)/.exec((await s.page.locator('#counts').textContent()) ?? '')?.[1]);
    const before = await frames();
    await s.page.waitForTimeout(5000);
    expect(await frames()).toBeGreaterThan(before + 5);
    expect(await summary()).toContain('CONVERGED');
  });

  it('runs the machines at real speed: a node heartbeats every wall-clock second', async () => {
    // Oberon's KubeNet sends a heartbeat every 1000 ms of its own timer; the page hears it on its
    // own clock. A time-scale trick (the reference's 2500 cycles per "ms") would show 100 ms.
    while ((await beats('node-a')).length < 15) await s.page.waitForTimeout(1000);
    const times = await beats('node-a');
    expect(times.length).toBeGreaterThan(11);
    const median = medianGap(times);
    expect(median).toBeGreaterThan(0.8);
    expect(median).toBeLessThan(1.25);
  });

  it('passes the six labs, judged from the air in the page', async () => {
    const statuses = await runAllLabs(s.page, 'lab-labs');
    expect(statuses, statuses.join('\n')).toEqual(statuses.map(() => expect.stringMatching(/^PASS/)));
  });

  it('typing a command into the plane screen changes what the air in the page hears', async () => {
    await typeIntoScreen(s.page, 'plane', 'Kube.Apply web 5 Ticker2');
    await s.page.waitForFunction(
      () => /pods running 5 · CONVERGED/.test(document.querySelector('#summary')?.textContent ?? ''),
      null,
      { timeout: 120_000, polling: 1000 },
    );
    await shot(s.page, 'lab-typed');
  });

  it('a rollout raced by a power cut ends converged on the new module, with a message for each', async () => {
    // The typed line left web at 5 × Ticker2: roll back to 4 × Ticker and pull node-a's plug at once.
    await s.page.fill('#command', 'Kube.Apply web 4 Ticker');
    await s.page.click('#command-form button');
    await s.page.click('#machine-node-a button.power');
    await s.page.waitForSelector('#machine-node-a.off', { timeout: 10_000 });
    const notices = (await s.page.locator('#notices').textContent()) ?? '';
    expect(notices).toContain('node-a switched off');
    expect(notices).toContain('typed into the plane: Kube.Apply web 4 Ticker');
    // Off long enough that the plane marks it NotReady mid-rollout and moves its pods.
    await s.page.waitForFunction(
      () => /nodes 1\/2 Ready/.test(document.querySelector('#summary')?.textContent ?? ''),
      null,
      { timeout: 60_000, polling: 500 },
    );
    await s.page.click('#machine-node-a button.power');
    await s.page.waitForSelector('#machine-node-a:not(.off)', { timeout: 10_000 });
    await s.page.waitForFunction(
      () => {
        const summary = document.querySelector('#summary')?.textContent ?? '';
        const images = [...document.querySelectorAll('#pods tbody tr')]
          .filter((tr) => tr.children[3]?.textContent !== '-') // running somewhere
          .map((tr) => tr.children[1]?.textContent);
        return (
          /nodes 2\/2 Ready · pods running 4 · CONVERGED/.test(summary) && images.every((i) => i === 'Ticker')
        );
      },
      null,
      { timeout: 300_000, polling: 1000 },
    );
    await shot(s.page, 'lab-raced');
  });

  it('keeps its pace in a background tab: the browser throttles the hidden page, not its machines', async () => {
    // This file's chromium throttles hidden pages as a person's does (launchThrottling): a hidden
    // page's timers wake at most once a second (its 100-ms timer below ran 20-21 times in 20 s).
    // The machines keep time in their Web Workers, which it does not throttle, and the air in the
    // page moves on their messages, not on timers or animation frames (which a hidden page never
    // gets): the nodes heartbeat every wall-clock second while another tab is in front. With the
    // air moved on requestAnimationFrame, on purpose once, this failed: 0 heartbeats while hidden.
    const page = s.page;
    // A timer of the page's own that would tick ten times a second: how hard the browser throttles.
    await page.evaluate(() => {
      const g = globalThis as unknown as { hiddenTicks: number; hiddenTimer: ReturnType<typeof setInterval> };
      g.hiddenTicks = 0;
      g.hiddenTimer = setInterval(() => {
        if (document.visibilityState === 'hidden') g.hiddenTicks++;
      }, 100);
    });
    const other = await s.browser.context.newPage();
    let from = 0;
    let to = 0;
    let ticks = 0;
    try {
      await other.bringToFront();
      const visibility = await pollUntil(
        () => page.evaluate(() => document.visibilityState),
        (v) => v === 'hidden',
        10_000,
        200,
      );
      expect(visibility, 'the lab tab is hidden behind another').toBe('hidden');
      from = await page.evaluate(() => Date.now());
      await new Promise((r) => setTimeout(r, HIDDEN_MS)); // the window the heartbeats are judged over
      to = await page.evaluate(() => Date.now());
      ticks = await page.evaluate(() => {
        const g = globalThis as unknown as {
          hiddenTicks: number;
          hiddenTimer: ReturnType<typeof setInterval>;
        };
        clearInterval(g.hiddenTimer);
        return g.hiddenTicks;
      });
    } finally {
      await page.bringToFront();
      await other.close();
    }
    // Throttled for real: far fewer than the ten a second a visible page gets (at most one a second).
    const seconds = (to - from) / 1000;
    console.log(`hidden ${seconds.toFixed(1)} s: the page's 100-ms timer ran ${ticks} times`);
    expect(ticks, 'the hidden page was not throttled').toBeLessThanOrEqual(seconds * 1.5);
    // Visible again, the page's next push (a timer) brings what its air heard meanwhile.
    await page.waitForFunction(
      (t) =>
        (globalThis as unknown as { retrokubeRecords: () => FrameRecord[] })
          .retrokubeRecords()
          .some((r) => r.t >= t),
      to,
      { timeout: 30_000, polling: 200 },
    );
    for (const node of ['node-a', 'node-b']) {
      const times = (await beats(node)).filter((t) => t >= from && t <= to);
      expect(times.length, `${node} heartbeats while hidden`).toBeGreaterThanOrEqual(seconds * 0.75);
      const median = medianGap(times);
      console.log(`${node}: ${times.length} heartbeats while hidden, median gap ${median.toFixed(2)} s`);
      expect(median, `${node}: median heartbeat gap while hidden`).toBeGreaterThan(0.8);
      expect(median, `${node}: median heartbeat gap while hidden`).toBeLessThan(1.25);
    }
    await waitConverged(page, 30_000);
    expect(await summary()).toMatch(/nodes 2\/2 Ready/);
  });
});

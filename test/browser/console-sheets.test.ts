// The console of `retrokube up` with the sample clusters: besides the Oberon cluster, the
// Sheeternetes cluster running alongside shows as its tabs (live tables), its events and a plot of
// its Metrics tab, read from the real apiserver over a real workbook, in Debian's chromium.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { ARTIFACTS, pageSession, shot } from './chromium.ts';
import { startUp } from './cli-process.ts';

const dir = mkdtempSync(join(tmpdir(), 'retrokube-console-sheets-'));
const s = pageSession(() => startUp(['--state', join(dir, 'state'), '--no-vnc'], 'Sheeternetes apiserver'), {
  cleanup: () => rmSync(dir, { recursive: true, force: true }),
});

it('shows the Sheeternetes tabs, events and a plot of the Metrics tab, live', async () => {
  const page = s.page;
  await page.waitForSelector('#sheets:not([hidden])', { timeout: 60_000 });
  // Pods scheduled by the sheet's scheduler onto the node agents show up in the pods table.
  await page.waitForFunction(
    () => {
      const body = document.querySelector('#sheets-body');
      return (
        !!body &&
        body.querySelectorAll('table').length >= 4 &&
        /Running|Succeeded/.test(body.textContent ?? '') &&
        Number(body.querySelector<SVGElement>('svg.plot')?.dataset.points ?? 0) >= 2 // two 15-s samples
      );
    },
    null,
    { timeout: 120_000, polling: 1000 },
  );
  const text = (await page.locator('#sheets-body').textContent()) ?? '';
  expect(text).toContain('nodes');
  expect(text).toContain('events');
  expect(text).not.toMatch(/secrets/i); // Secrets never reach a screen
  expect(await page.locator('#sheets-body pre').textContent()).toMatch(/scheduled to node-/);
  await page.locator('#sheets').screenshot({ path: join(ARTIFACTS, 'console-sheets.png') });
  await shot(page, 'console-sample');
});

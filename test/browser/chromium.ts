// Debian's chromium driven by playwright-core (which never downloads a browser): headless, no
// sandbox (tests run as root in CI containers), nothing phoning home, a fresh profile each time.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';

export const CHROMIUM = process.env.RETROKUBE_CHROMIUM ?? '/usr/bin/chromium';

export const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  // The lab's machines live in workers of a tab that may be hidden: keep them at full speed.
  '--disable-background-timer-throttling',
  '--disable-renderer-backgrounding',
];

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launch(): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 'retrokube-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: 1400, height: 1100 },
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Screenshots go here (kept by CI as test artifacts). */
export const ARTIFACTS = process.env.RETROKUBE_ARTIFACTS
  ? join(process.env.RETROKUBE_ARTIFACTS, 'browser')
  : join(import.meta.dirname, '../../test-results/browser');

export async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** Run in the page: the named machine's canvas shows something other than one colour. */
export function screenHasInk(machine: string): boolean {
  const c = document.querySelector<HTMLCanvasElement>(`canvas[data-machine="${machine}"]`);
  const d = c?.getContext('2d')?.getImageData(0, 0, c.width, c.height).data;
  if (!d) return false;
  for (let i = 4; i < d.length; i += 4) if (d[i] !== d[0]) return true;
  return false;
}

export const labStatuses = (page: Page): Promise<string[]> => page.locator('#labs .status').allTextContents();

/**
 * Types a command into a machine's System.Tool through the page, as a person would: left click
 * into the tool (the reference lab's spot), Enter and the text on the keyboard, then a middle
 * click on the new line's first word, found where the screen changed.
 */
export async function typeIntoScreen(page: Page, machine: string, text: string): Promise<void> {
  const canvas = page.locator(`canvas[data-machine="${machine}"]`);
  await canvas.scrollIntoViewIfNeeded();
  const box = await canvas.boundingBox();
  if (!box) throw new Error(`the ${machine} screen is not on the page`);
  const at = (x: number, y: number) => ({
    x: box.x + (x / 1024) * box.width,
    y: box.y + (y / 768) * box.height,
  });
  const pixels = () =>
    page.evaluate((m) => {
      const c = document.querySelector<HTMLCanvasElement>(`canvas[data-machine="${m}"]`);
      const d = c?.getContext('2d')?.getImageData(0, 0, 1024, 768).data;
      return d ? Array.from(d.filter((_, i) => i % 4 === 0)) : [];
    }, machine);
  // Left click into System.Tool (the reference lab's spot), then type a line as a person would.
  const p = at(900, 210);
  await page.mouse.click(p.x, p.y);
  await page.waitForTimeout(500);
  const before = await pixels();
  await page.keyboard.press('Enter');
  await page.keyboard.type(text, { delay: 30 });
  // The typed line is where the screen changed: middle-click its first word to execute it.
  // Polled until two looks agree: the machine draws the line as it reads the keys.
  let changed: { x0: number; y0: number; y1: number } | null = null;
  let previous = '';
  for (let i = 0; i < 60; i++) {
    await page.waitForTimeout(500);
    const after = await pixels();
    let x0 = 1024;
    let y0 = 768;
    let y1 = -1;
    for (let j = 0; j < after.length; j++)
      if (after[j] !== before[j]) {
        const x = j % 1024;
        const y = Math.floor(j / 1024);
        x0 = Math.min(x0, x);
        y0 = Math.min(y0, y);
        y1 = Math.max(y1, y);
      }
    const now = y1 >= 0 ? { x0, y0, y1 } : null;
    if (now && JSON.stringify(now) === previous) {
      changed = now;
      break;
    }
    previous = JSON.stringify(now);
  }
  if (!changed) throw new Error(`typing changed nothing on the ${machine} screen`);
  const target = at(changed.x0 + 3, changed.y1 - 6);
  await page.mouse.move(target.x, target.y);
  await page.mouse.down({ button: 'middle' });
  await page.waitForTimeout(150);
  await page.mouse.up({ button: 'middle' });
}

// The one helper of the browser tests (and bench/browser): Debian's chromium driven by
// playwright-core (which never downloads a browser) — headless, no sandbox (tests run as root in CI
// containers), nothing phoning home, a fresh profile each time — and what every test does with a
// page of ours: open it, wait for a converged cluster, run the six labs, poll the server, probe it
// from another origin and another Host name, type into a machine's screen, save screenshots.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';

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
  mkdirSync(ARTIFACTS, { recursive: true });
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

/** The flags (two in ARGS, all three among Playwright's own) that keep a hidden page's timers at full speed. */
const NO_THROTTLING = [
  '--disable-background-timer-throttling',
  '--disable-renderer-backgrounding',
  '--disable-backgrounding-occluded-windows',
];

export const THROTTLING_LIMITS = {
  startMs: 30_000, // chromium writes its DevTools port within this
  exitMs: 5_000, // ...and exits within this once closed, or is killed
  // Chromium throttles a hidden page's main-thread timers to one wake-up a second at once, and
  // chained ones to one a minute after 5 minutes hidden (intensive wake-up throttling); this cuts
  // that grace period to seconds. (A plain page is then down to one a minute within seconds; the
  // lab page, busy with its workers' messages, stayed at one a second over 20 s in our runs.)
  intensiveAfterS: 5,
} as const;

/**
 * Chromium as a person runs it, for a test of a page in a background tab: its own throttling of
 * hidden pages on (none of the flags above), and no focus emulation — Playwright's keeps every page
 * it drives "visible", so a tab behind another is never hidden. Started here on a loopback DevTools
 * port and attached with connectOverCDP's `noDefaults`; the same viewport as `launch()`.
 */
export async function launchThrottling(): Promise<Browser> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const profile = mkdtempSync(join(tmpdir(), 'retrokube-chromium-'));
  const proc = spawn(
    CHROMIUM,
    [
      ...ARGS.filter((a) => !NO_THROTTLING.includes(a)),
      '--headless',
      '--window-size=1400,1100',
      `--enable-features=IntensiveWakeUpThrottling:grace_period_seconds/${THROTTLING_LIMITS.intensiveAfterS}`,
      '--remote-debugging-address=127.0.0.1',
      '--remote-debugging-port=0',
      `--user-data-dir=${profile}`,
      'about:blank',
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  const stop = async () => {
    // Asked to close, it exits on its own; killed after a few seconds if not; its profile goes after it.
    const late = setTimeout(() => proc.kill('SIGKILL'), THROTTLING_LIMITS.exitMs);
    if (proc.exitCode === null && proc.signalCode === null) await exited;
    clearTimeout(late);
    rmSync(profile, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  };
  try {
    // Chromium writes "PORT\n/devtools/browser/ID" once it listens.
    const portFile = join(profile, 'DevToolsActivePort');
    const end = Date.now() + THROTTLING_LIMITS.startMs;
    let lines: string[] = [];
    while (lines.length < 2 || !lines[1]) {
      if (proc.exitCode !== null)
        throw new Error(`${CHROMIUM} exited with ${proc.exitCode} before it listened`);
      if (Date.now() > end)
        throw new Error(`${CHROMIUM} wrote no DevToolsActivePort within ${THROTTLING_LIMITS.startMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
      lines = existsSync(portFile) ? readFileSync(portFile, 'utf8').split('\n') : [];
    }
    const browser = await chromium.connectOverCDP(`ws://127.0.0.1:${lines[0]}${lines[1]}`, {
      noDefaults: true,
    });
    return {
      context: browser.contexts()[0],
      close: async () => {
        await browser.close().catch(() => undefined);
        await stop();
      },
    };
  } catch (err) {
    proc.kill('SIGKILL');
    await stop();
    throw err;
  }
}

/** What a test opens a page on: `retrokube up`, `retrokube sheets up` (cli-process.ts) or `retrokube lab`. */
export interface Served {
  url: string;
  stop(): Promise<void>;
}

/** The server, the browser and the first page of one test file; a test may replace `server` (a restart). */
export interface PageSession<T extends Served> {
  server: T;
  browser: Browser;
  page: Page;
}

/**
 * The set-up every browser test file shares: before all, `start()` runs the server, chromium
 * starts and a page opens on it (link up); after all, the browser closes, the server stops and
 * `cleanup` runs. Call at the top level of a test file.
 */
export function pageSession<T extends Served>(
  start: () => Promise<T>,
  o: {
    startTimeoutMs?: number;
    linkTimeoutMs?: number;
    cleanup?: () => void;
    /** The browser (default `launch()`: hidden pages never throttled). */
    browser?: () => Promise<Browser>;
  } = {},
): PageSession<T> {
  const s = {} as PageSession<T>;
  beforeAll(async () => {
    s.server = await start();
    s.browser = await (o.browser ?? launch)();
    s.page = await openPage(s.browser, s.server.url, o.linkTimeoutMs ?? 60_000);
  }, o.startTimeoutMs ?? 180_000);
  afterAll(async () => {
    await s.browser?.close();
    await s.server?.stop();
    o.cleanup?.();
  }, 60_000);
  return s;
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

/** A new page of `browser` at `url`, its script errors on our stderr, once its link to the cluster is up. */
const consoleLogs = new WeakMap<Page, string[]>();
/** What the page's console said as errors (script errors, failed loads) since it opened. */
export const consoleErrors = (page: Page): string[] => consoleLogs.get(page) ?? [];

export async function openPage(browser: Browser, url: string, linkTimeoutMs = 60_000): Promise<Page> {
  const page = await browser.context.newPage();
  const errors: string[] = [];
  consoleLogs.set(page, errors);
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`${m.text()} (${m.location().url})`);
  });
  page.on('pageerror', (e) => {
    errors.push(`page error: ${e.message}`);
    process.stderr.write(`page error: ${e.message}\n`);
  });
  await page.goto(url);
  await page.waitForSelector('#link.up', { timeout: linkTimeoutMs });
  return page;
}

/** Until the page says the cluster it hears on the air is CONVERGED. */
export async function waitConverged(page: Page, timeoutMs: number, pollingMs = 1000): Promise<void> {
  await page.waitForFunction(
    () => document.querySelector('#summary')?.textContent?.includes('CONVERGED'),
    null,
    { timeout: timeoutMs, polling: pollingMs },
  );
}

/** Clicks "run all six" and waits for the verdicts (a screenshot either way); returns each lab's status. */
export async function runAllLabs(page: Page, shotName: string): Promise<string[]> {
  await page.click('#run-all');
  try {
    await page.waitForFunction(
      () => document.querySelector('#labs-summary')?.textContent?.includes('passed'),
      null,
      { timeout: 900_000, polling: 1000 },
    );
  } finally {
    await shot(page, shotName);
  }
  return labStatuses(page);
}

/** Reads until `done` holds or the time is up; returns the last reading (the caller asserts on it). */
export async function pollUntil<T>(
  read: () => Promise<T>,
  done: (v: T) => boolean,
  timeoutMs: number,
  everyMs = 1000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  let v = await read();
  while (Date.now() < end && !done(v)) {
    await new Promise((r) => setTimeout(r, everyMs));
    v = await read();
  }
  return v;
}

/** GET a console's JSON read (api/view, api/state, api/sheets) as a script would. */
export const readJson = async <T>(consoleUrl: string, path: string): Promise<T> =>
  (await fetch(new URL(path, consoleUrl))).json() as Promise<T>;

/**
 * A page of another origin (another port of this machine) tries what an attacker's page would: open
 * the console's event socket and POST an action with a "simple" content type (no preflight).
 * Returns the page's own account, "fetch <status|blocked>, ws <open|refused>".
 */
export async function foreignOriginTries(
  browser: Browser,
  consoleUrl: string,
  action: { path: string; body: unknown },
): Promise<string> {
  const evil = http.createServer((_, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(`<script>
      const c = ${JSON.stringify(new URL('/', consoleUrl).href)};
      const ws = new WebSocket(c.replace('http', 'ws') + 'api/events');
      let wsResult = 'pending';
      ws.onopen = () => { wsResult = 'open'; };
      ws.onerror = () => { wsResult = 'refused'; };
      fetch(c + ${JSON.stringify(action.path)}, { method: 'POST', body: ${JSON.stringify(JSON.stringify(action.body))}, headers: { 'content-type': 'text/plain' } })
        .then((r) => 'status ' + r.status, () => 'blocked')
        .then((f) => setTimeout(() => { document.title = 'fetch ' + f + ', ws ' + wsResult; }, 1000));
    </script>`);
  });
  await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r));
  const other = await browser.context.newPage();
  try {
    await other.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`);
    await other.waitForFunction(() => document.title.startsWith('fetch'), null, { timeout: 15_000 });
    return await other.title();
  } finally {
    await other.close();
    evil.close();
  }
}

/** The status a request to the console's address under another Host name gets (DNS rebinding). */
export function statusUnderForeignHost(consoleUrl: string, path: string): Promise<number> {
  const u = new URL(consoleUrl);
  return new Promise<number>((resolve) => {
    http
      .get({ host: u.hostname, port: u.port, path, headers: { host: 'evil.example' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      })
      .on('error', () => resolve(0));
  });
}

/**
 * Waits until the page's table of a sheet tab (`[data-tab=TAB]`) has at least `count` rows whose
 * cells equal `where` (column → text): what a person sees, not what the server holds.
 */
export async function waitForRows(
  page: Page,
  tab: string,
  where: Record<string, string>,
  count = 1,
  timeoutMs = 90_000,
): Promise<void> {
  await page.waitForFunction(
    ([t, w, n]) => {
      const table = document.querySelector(`table[data-tab="${t}"]`);
      if (!table) return false;
      const cols = [...table.querySelectorAll('thead th')].map((th) => th.textContent);
      const rows = [...table.querySelectorAll('tbody tr')].filter((tr) =>
        Object.entries(w).every(([c, v]) => tr.children[cols.indexOf(c)]?.textContent === v),
      );
      return rows.length >= n;
    },
    [tab, where, count] as [string, Record<string, string>, number],
    { timeout: timeoutMs, polling: 500 },
  );
}

/**
 * Run in the page: what keeps it from fitting its window's width, as a person would meet it — the
 * page scrolls sideways; a control (button, input, select) lies outside the window or under
 * something else once scrolled to; a box cuts its content off instead of wrapping or scrolling it.
 * Empty when the page fits. Scrolls the page (to each control, then back to the top).
 */
export function fitProblems(): string[] {
  const problems: string[] = [];
  const vw = document.documentElement.clientWidth;
  const name = (e: Element): string =>
    `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ''}${e.className ? `.${String(e.className).split(' ').join('.')}` : ''} "${(e.textContent ?? '').trim().slice(0, 30)}"`;
  if (document.documentElement.scrollWidth > vw)
    problems.push(`the page is ${document.documentElement.scrollWidth} px wide in a ${vw} px window`);
  const controls = [...document.querySelectorAll<HTMLElement>('button, input, select')].filter(
    (c) => c.getClientRects().length > 0 && !c.closest('[hidden]'),
  );
  for (const c of controls) {
    c.scrollIntoView({ block: 'center', inline: 'nearest' });
    const r = c.getBoundingClientRect();
    if (r.left < 0 || r.right > vw) {
      problems.push(`${name(c)} spans ${Math.round(r.left)}..${Math.round(r.right)} px`);
      continue;
    }
    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    if (!hit || !(c === hit || c.contains(hit)))
      problems.push(`${name(c)} is under ${hit ? name(hit) : 'nothing'}`);
  }
  for (const e of document.querySelectorAll<HTMLElement>('body *')) {
    const x = getComputedStyle(e).overflowX;
    if ((x === 'hidden' || x === 'clip') && e.scrollWidth > e.clientWidth + 1)
      problems.push(`${name(e)} cuts off ${e.scrollWidth - e.clientWidth} px of its content`);
  }
  window.scrollTo(0, 0);
  return problems;
}

/** Waits for the red banner a page shows when its server went away; returns its text. */
export async function linkDownMessage(page: Page): Promise<string> {
  await page.waitForSelector('#link.down', { timeout: 20_000 });
  return (await page.locator('#link').textContent()) ?? '';
}

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

// The live-commands file: what is sent to a running plane, when, and what is refused.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LIVE_LIMITS, linesToSend, parseLiveCommands, watchLiveCommands } from './live-commands.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
/** A watcher that only polls when told to, with what it fed and warned. */
function watching(path: string) {
  const fed: string[] = [];
  const warned: string[] = [];
  const w = watchLiveCommands({
    path,
    feed: (t) => fed.push(t),
    warn: (m) => warned.push(m),
    pollMs: 60_000,
  });
  return { fed, warned, w };
}
function tempFile(): string {
  const d = mkdtempSync(join(tmpdir(), 'rk-live-'));
  dirs.push(d);
  return join(d, 'deployments');
}

describe('live commands for a running plane', () => {
  it('accepts only Kube.Apply and Kube.Hold lines of the schema shape, once each, and names what it refused', () => {
    const p = parseLiveCommands(
      '# desired\nKube.Hold 3\nKube.Apply web 6 Ticker2\n\n  Kube.Apply   api 2 Ticker \nKube.Apply web 6 Ticker2\nSystem.Directory *\nKube.Apply web 6 Ticker2;System.Halt\nKube.Hold 0\nKube.Hold 3;System.Halt\n',
    );
    expect(p.lines).toEqual(['Kube.Hold 3', 'Kube.Apply web 6 Ticker2', 'Kube.Apply api 2 Ticker']);
    expect(p.refused).toEqual([
      'System.Directory *',
      'Kube.Apply web 6 Ticker2;System.Halt',
      'Kube.Hold 0',
      'Kube.Hold 3;System.Halt',
    ]);
  });

  it('sends a line again only when it changed', () => {
    const sent = new Set(['Kube.Apply web 4 Ticker', 'Kube.Apply api 2 Ticker']);
    expect(linesToSend(sent, ['Kube.Apply web 6 Ticker2', 'Kube.Apply api 2 Ticker'])).toEqual([
      'Kube.Apply web 6 Ticker2',
    ]);
  });

  it('feeds everything at start, then each change, then a line that came back; waits for a missing file', async () => {
    const path = tempFile();
    const { fed, warned, w } = watching(path);
    try {
      await w.poll();
      expect(warned).toEqual([`${path} does not exist yet; waiting`]);
      writeFileSync(path, 'Kube.Apply web 4 Ticker\nKube.Apply api 1 Ticker\n');
      await w.poll();
      await w.poll(); // unchanged: nothing more
      writeFileSync(path, 'Kube.Apply web 6 Ticker2\nKube.Apply api 1 Ticker\n');
      await w.poll();
      writeFileSync(path, 'Kube.Apply web 4 Ticker\nKube.Apply api 1 Ticker\n');
      await w.poll();
      expect(fed).toEqual([
        '\nKube.Apply web 4 Ticker\nKube.Apply api 1 Ticker\n',
        '\nKube.Apply web 6 Ticker2\n',
        '\nKube.Apply web 4 Ticker\n',
      ]);
    } finally {
      w.stop();
    }
  });

  it('refuses an oversized file whole and says so once', async () => {
    const path = tempFile();
    writeFileSync(path, `Kube.Apply web 1 Ticker\n${'#'.repeat(LIVE_LIMITS.maxFileBytes)}\n`);
    const { fed, warned, w } = watching(path);
    await w.poll();
    await w.poll();
    w.stop();
    expect(fed).toEqual([]);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatch(/more than 8192; nothing sent/);
  });
});

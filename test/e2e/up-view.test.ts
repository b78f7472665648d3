// The live view of `retrokube up` as a person sees it: in a real terminal of 80×24 (tmux), captured
// and read. It must fit (no line wider, no frame taller, the footer on the last line), draw on the
// alternate screen (so the start-up lines with the addresses are still there after Ctrl-C), and
// keep the addresses reachable (`retrokube status`); up.log holds JSON lines only.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MAIN } from './up-harness.ts';

const dir = mkdtempSync(join(tmpdir(), 'up-view-'));
const state = join(dir, 'state');
const socket = `retrokube-view-${process.pid}`; // a tmux server of our own, ended by name below
const tmux = (...args: string[]): string =>
  execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
// -J joins lines the terminal wrapped: a line too wide for 80 columns shows as one long line
const pane = (): string => tmux('capture-pane', '-p', '-J', '-t', 'view');
const sh = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

async function until(what: string, ok: (text: string) => boolean, ms: number): Promise<string> {
  const end = Date.now() + ms;
  let text = '';
  while (Date.now() < end) {
    text = pane();
    if (ok(text)) return text;
    await new Promise((r) => setTimeout(r, 1000));
  }
  throw new Error(`${what} not seen within ${ms / 1000} s; the terminal shows:\n${text}`);
}

afterAll(() => {
  try {
    tmux('kill-server');
  } catch {
    // already gone
  }
  rmSync(dir, { recursive: true, force: true });
});

describe('the live view in a terminal of 80×24', () => {
  it('fits, keeps the addresses reachable, and leaves the start-up lines behind it', async () => {
    const cmd = `cd ${sh(dir)} && RETROKUBE_STATE=${sh(state)} RETROKUBE_LOG_LEVEL=info ${sh(process.execPath)} ${sh(MAIN)} up; echo UP-EXITED; sleep 300`;
    tmux('new-session', '-d', '-s', 'view', '-x', '80', '-y', '24', cmd);
    const frame = await until(
      'a CONVERGED frame',
      (t) => /CONVERGED/.test(t) && /Sheeternetes/.test(t),
      240_000,
    );
    const lines = frame.replace(/\n+$/, '').split('\n');
    expect(lines.length).toBeLessThanOrEqual(24);
    expect(lines.filter((l) => l.length > 80)).toEqual([]);
    expect(lines[0]).toMatch(/^Kube on Oberon "sample" \(cluster "kube", tag \d+\)/);
    expect(frame).toMatch(/^NODE\s+STATUS/m);
    expect(frame).toMatch(/^POD\s+IMAGE/m);
    expect(lines.at(-1)).toMatch(/^Ctrl-C stops · \S*retrokube status/);

    // the addresses, from another terminal
    const status = execFileSync(process.execPath, [MAIN, 'status'], {
      encoding: 'utf8',
      env: { ...process.env, RETROKUBE_STATE: state },
    });
    expect(status).toMatch(/^web console\s+http:\/\/127\.0\.0\.1:\d+/m);
    expect(status).toMatch(/^apiserver\s+http:\/\/127\.0\.0\.1:\d+/m);
    expect(status).toMatch(/^node-a\s+node, VNC 127\.0\.0\.1:\d+/m);

    tmux('send-keys', '-t', 'view', 'C-c');
    const after = await until('the end of up', (t) => /UP-EXITED/.test(t), 120_000);
    // back on the normal screen: the start-up lines, not the last frame
    expect(after).toMatch(/web console http:\/\/127\.0\.0\.1:\d+/);
    expect(after).toMatch(/state: .*; delete it to start fresh/);
    expect(after).not.toMatch(/CONVERGED/);

    const log = readFileSync(join(state, 'up.log'), 'utf8');
    expect(log.slice(-300)).toMatch(/\}\n$/);
    const bad = log
      .split('\n')
      .filter(Boolean)
      .filter((l) => {
        try {
          JSON.parse(l);
          return false;
        } catch {
          return true;
        }
      });
    expect(bad).toEqual([]);
  }, 420_000);
});

// `retrokube up` from outside, as a person runs and steers it: `up` in its own process, the
// companion verbs as more processes, and every judgement from the cluster view `up` keeps as a
// passive station on the air (read through its control endpoint, never by asking the plane).
// Shared by test/e2e/up.test.ts and test/qemu/up-qemu.test.ts.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ClusterView } from '../../operator/src/air/view.ts';

export const MAIN = join(import.meta.dirname, '../../operator/src/cli/main.ts');

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

export interface UpProcess {
  proc: ChildProcess;
  /** Everything it wrote to stdout and stderr so far. */
  log: () => string;
}

/** The CLI and the view of the `up` whose state folder is `state` (RETROKUBE_STATE in `env`). */
export function upSession(state: string, env: NodeJS.ProcessEnv) {
  let current: UpProcess | null = null;

  /** One `retrokube ARGS` process; its exit code and output. */
  const cli = (...args: string[]): Promise<Run> =>
    new Promise((resolve) => {
      execFile(process.execPath, [MAIN, ...args], { env, timeout: 60_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
    });

  /** Starts `retrokube up ARGS` (its output collected for the failure messages). */
  const start = (args: string[], extraEnv: NodeJS.ProcessEnv = {}): UpProcess => {
    let log = '';
    const proc = spawn(process.execPath, [MAIN, 'up', ...args], { env: { ...env, ...extraEnv } });
    proc.stdout?.on('data', (b: Buffer) => {
      log += b.toString();
    });
    proc.stderr?.on('data', (b: Buffer) => {
      log += b.toString();
    });
    current = { proc, log: () => log };
    return current;
  };

  /** SIGTERM to the last `up` started, as Ctrl-C would; resolves when it is gone. */
  const stop = async (): Promise<void> => {
    const p = current?.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const gone = new Promise((r) => p.once('exit', r));
    p.kill('SIGTERM');
    await gone;
  };

  /** The cluster as `up` hears it now (throws while `up` has not written its up.json yet). */
  const view = async (): Promise<ClusterView> => {
    const st = JSON.parse(readFileSync(join(state, 'up.json'), 'utf8')) as { control: string };
    return (await (await fetch(new URL('/view', st.control))).json()) as ClusterView;
  };

  /** Waits until the view passes `test`; how long that took, or an error with the nodes and `up`'s log. */
  const until = async (test: (v: ClusterView) => boolean, ms: number, what: string): Promise<number> => {
    const t0 = Date.now();
    let last: ClusterView | null = null;
    while (Date.now() - t0 < ms) {
      if (existsSync(join(state, 'up.json'))) {
        last = await view().catch(() => null);
        if (last && test(last)) return Date.now() - t0;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    const nodes = JSON.stringify(last?.nodes.map((n) => [n.name, n.ready, n.running, n.assigned]));
    throw new Error(
      `${what}: not within ${ms / 1000} s; nodes ${nodes}\n${current?.log().slice(-2000) ?? ''}`,
    );
  };

  return { cli, start, stop, view, until, log: () => current?.log() ?? '' };
}

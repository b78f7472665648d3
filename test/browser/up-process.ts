// `retrokube up` as a user runs it, in its own process, for the console's browser tests.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

const MAIN = join(import.meta.dirname, '../../operator/src/cli/main.ts');

export interface Up {
  proc: ChildProcess;
  /** The web console's URL as `up` printed it. */
  url: string;
  log: () => string;
}

/** Starts `retrokube up ARGS`; resolves once it printed its console URL and `ready` (a line it prints). */
export function startUp(args: string[], ready: string, timeoutMs = 120_000): Promise<Up> {
  let log = '';
  const proc = spawn(process.execPath, [MAIN, 'up', ...args, '--no-view'], {
    env: { ...process.env, LOG_LEVEL: 'warn' },
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`up did not start in ${timeoutMs / 1000} s:\n${log}`)),
      timeoutMs,
    );
    const seen = (b: Buffer): void => {
      log += b.toString();
      const m = /web console (\S+)/.exec(log);
      if (m && log.includes(ready)) {
        clearTimeout(timer);
        resolve({ proc, url: m[1], log: () => log });
      }
    };
    proc.stdout?.on('data', seen);
    proc.stderr?.on('data', seen);
    proc.on('exit', (code) => reject(new Error(`up exited (${code}) before its console was ready:\n${log}`)));
  });
}

/** SIGTERM, as Ctrl-C would; resolves when the process is gone. */
export const stopUp = (u: Up): Promise<void> =>
  new Promise((r) => {
    if (u.proc.exitCode !== null) return r();
    u.proc.once('exit', () => r());
    u.proc.kill('SIGTERM');
  });

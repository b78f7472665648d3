// The real CLI as a user runs it (`retrokube up`, `retrokube sheets up`), in its own process, for
// the browser tests: started, waited for until it printed its web console's URL, stopped as Ctrl-C.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

const MAIN = join(import.meta.dirname, '../../operator/src/cli/main.ts');

export interface Cli {
  proc: ChildProcess;
  /** The web console's URL as the CLI printed it. */
  url: string;
  log: () => string;
  /** SIGTERM, as Ctrl-C would; resolves when the process is gone. */
  stop: () => Promise<void>;
}

/**
 * Starts `retrokube ARGS`; resolves once it printed its console URL and `ready` (a line it prints).
 * `env` adds to the environment (a signing key, never on argv).
 */
export function startCli(
  args: string[],
  ready: string,
  o: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<Cli> {
  const timeoutMs = o.timeoutMs ?? 120_000;
  let log = '';
  const proc = spawn(process.execPath, [MAIN, ...args], {
    env: { ...process.env, LOG_LEVEL: 'warn', ...o.env },
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`retrokube ${args[0]} did not start in ${timeoutMs / 1000} s:\n${log}`)),
      timeoutMs,
    );
    const seen = (b: Buffer): void => {
      log += b.toString();
      const m = /web console (\S+)/.exec(log);
      if (m && log.includes(ready)) {
        clearTimeout(timer);
        resolve({ proc, url: m[1], log: () => log, stop: () => stopProcess(proc) });
      }
    };
    proc.stdout?.on('data', seen);
    proc.stderr?.on('data', seen);
    proc.on('exit', (code) =>
      reject(new Error(`retrokube ${args[0]} exited (${code}) before its console was ready:\n${log}`)),
    );
  });
}

/** `retrokube up ARGS` with no live terminal view. */
export const startUp = (args: string[], ready: string, timeoutMs?: number): Promise<Cli> =>
  startCli(['up', ...args, '--no-view'], ready, { timeoutMs });

const stopProcess = (proc: ChildProcess): Promise<void> =>
  new Promise((r) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return r();
    proc.once('exit', () => r());
    proc.kill('SIGTERM');
  });

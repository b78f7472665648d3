// A `retrokube up` for e2e suites, as a user runs it: the real CLI in its own process with a state
// folder of its own, the companion verbs as other processes, its control endpoint read as the CLI
// reads it (the address in up.json).
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const MAIN = join(import.meta.dirname, '../../operator/src/cli/main.ts');

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class UpProcess {
  readonly state: string;
  private readonly env: NodeJS.ProcessEnv;
  private proc: ChildProcess | null = null;
  /** The newest output of the `up` process (for failure messages). */
  log = '';

  constructor(state: string) {
    this.state = state;
    this.env = { ...process.env, RETROKUBE_STATE: state, LOG_LEVEL: 'warn' };
  }

  /** `retrokube up FILE --no-view` with no VNC and no web console. */
  start(file: string): void {
    this.proc = spawn(process.execPath, [MAIN, 'up', file, '--no-view', '--no-vnc', '--no-console'], {
      env: this.env,
    });
    const keep = (b: Buffer) => {
      this.log = (this.log + b.toString()).slice(-20_000);
    };
    this.proc.stdout?.on('data', keep);
    this.proc.stderr?.on('data', keep);
  }

  /** Another `retrokube` command against this `up` (its state folder in the environment). */
  cli(...args: string[]): Promise<CliRun> {
    return new Promise((resolve) => {
      execFile(process.execPath, [MAIN, ...args], { env: this.env, timeout: 60_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
    });
  }

  /** GET a path of the control endpoint, as JSON. */
  async get<T>(path: string): Promise<T> {
    const st = JSON.parse(readFileSync(join(this.state, 'up.json'), 'utf8')) as { control: string };
    return (await (await fetch(new URL(path, st.control))).json()) as T;
  }

  /** Looks until `test` holds (once a second, while `up` runs); the last look and `up`'s output on failure. */
  async until<T>(look: () => Promise<T>, test: (x: T) => boolean, ms: number, what: string): Promise<T> {
    const t0 = Date.now();
    let last: T | undefined;
    while (Date.now() - t0 < ms) {
      if (existsSync(join(this.state, 'up.json'))) {
        last = await look().catch(() => undefined);
        if (last !== undefined && test(last)) return last;
      }
      await sleep(1000);
    }
    throw new Error(
      `${what}: not within ${ms / 1000} s; last ${JSON.stringify(last)}\n${this.log.slice(-3000)}`,
    );
  }

  async stop(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    p.kill('SIGTERM');
    await new Promise((r) => p.once('exit', r));
  }
}

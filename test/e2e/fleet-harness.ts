// A `retrokube up` running a fleet FILE, for the fleet rollout suites: the session of up-harness.ts
// (the CLI as other processes, `up` started and stopped) plus reads of the fleet's control endpoint
// (rollouts, clusters, a cluster's view) and waits on any of them.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { upSession } from './up-harness.ts';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class UpProcess {
  readonly state: string;
  private readonly session: ReturnType<typeof upSession>;

  constructor(state: string) {
    this.state = state;
    this.session = upSession(state, { ...process.env, RETROKUBE_STATE: state, LOG_LEVEL: 'warn' });
  }

  /** `retrokube up FILE --no-view` with no VNC and no web console. */
  start(file: string): void {
    this.session.start([file, '--no-view', '--no-vnc', '--no-console']);
  }

  /** Another `retrokube` command against this `up` (its state folder in the environment). */
  cli(...args: string[]) {
    return this.session.cli(...args);
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
      `${what}: not within ${ms / 1000} s; last ${JSON.stringify(last)}\n${this.session.log().slice(-3000)}`,
    );
  }

  stop(): Promise<void> {
    return this.session.stop();
  }
}

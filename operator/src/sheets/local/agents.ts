// The node agents of `retrokube sheets up`, as child processes (`retrokube sheets node`), which the
// web console may stop and start one by one. The token and signing key go through the environment,
// never argv (every user reads argv in `ps`).
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const LIMITS = {
  stopGraceMs: 5_000, // an agent gets this long after SIGTERM (it stops its pods) before SIGKILL
} as const;

const MAIN = fileURLToPath(new URL('../../cli/main.ts', import.meta.url));

/** The agent's command line: never the token, which every user could read in `ps` (see nodeAgentEnv). */
export function nodeAgentArgs(url: string, name: string, allowProcess = false): string[] {
  return [
    MAIN,
    'sheets',
    'node',
    '--server',
    url,
    '--name',
    name,
    ...(allowProcess ? ['--allow-process'] : []),
  ];
}

export function nodeAgentEnv(
  token: string,
  base: NodeJS.ProcessEnv = process.env,
  signingKey?: string,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base, TOKEN: token };
  if (signingKey) env.SIGNING_KEY = signingKey;
  else delete env.SIGNING_KEY;
  return env;
}

export interface AgentsOptions {
  url: string;
  token: string;
  signingKey?: string;
  allowProcess?: boolean;
  /** Where the agents' output goes: an open file or fd; default: their stderr only, to ours. */
  output?: number;
}

/** Names node-a … node-z, node-a26 …, as `sheets up` has always named them. */
export const agentName = (i: number): string =>
  `node-${String.fromCharCode(97 + (i % 26))}${i >= 26 ? i : ''}`;

export class NodeAgents {
  readonly #o: AgentsOptions;
  readonly #children = new Map<string, ChildProcess>();
  /** Every agent ever started, in order: a stopped one keeps its place in the list. */
  readonly #names: string[] = [];

  constructor(o: AgentsOptions) {
    this.#o = o;
  }

  start(name: string): void {
    const running = this.#children.get(name);
    if (running && running.exitCode === null && running.signalCode === null) return; // already on: idempotent
    const child = spawn(process.execPath, nodeAgentArgs(this.#o.url, name, this.#o.allowProcess), {
      stdio: ['ignore', this.#o.output ?? 'ignore', this.#o.output ?? 'inherit'],
      env: nodeAgentEnv(this.#o.token, process.env, this.#o.signingKey),
    });
    this.#children.set(name, child);
    if (!this.#names.includes(name)) this.#names.push(name);
  }

  async stop(name: string): Promise<void> {
    const c = this.#children.get(name);
    this.#children.delete(name);
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      const kill = setTimeout(() => c.kill('SIGKILL'), LIMITS.stopGraceMs);
      c.once('exit', () => {
        clearTimeout(kill);
        resolve();
      });
      c.kill('SIGTERM');
    });
  }

  async power(name: string, on: boolean): Promise<void> {
    if (on) this.start(name);
    else await this.stop(name);
  }

  list(): { name: string; on: boolean }[] {
    return this.#names.map((name) => {
      const c = this.#children.get(name);
      return { name, on: !!c && c.exitCode === null && c.signalCode === null };
    });
  }

  get size(): number {
    return this.#names.length;
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.#children.keys()].map((n) => this.stop(n)));
  }
}

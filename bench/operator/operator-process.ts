// The operator under benchmark as a process of its own: started (one of several ways), read through
// its /metrics and /proc, stopped. Shared by the run (harness.ts) and the start measurement (starts.ts).
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, REPO_ROOT } from '../../test/envtest/control-plane.ts';

const LIMITS = {
  startTimeoutMs: 60_000, // an operator whose /metrics does not answer by then failed to start
  stopTimeoutMs: 15_000, // SIGTERM grace (the manager stops its informers and servers) before SIGKILL
} as const;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function metrics(port: number): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

export function sum(
  m: Map<string, number>,
  prefix: string,
  filter: (k: string) => boolean = () => true,
): number {
  let n = 0;
  for (const [k, v] of m) if (k.startsWith(prefix) && filter(k)) n += v;
  return n;
}

export const writes = (m: Map<string, number>) =>
  sum(m, 'rest_client_requests_total{', (k) => /method="(POST|PUT|PATCH|DELETE)"/.test(k));
export const reconciles = (m: Map<string, number>) => sum(m, 'controller_runtime_reconcile_total{');
export const errors = (m: Map<string, number>) => sum(m, 'controller_runtime_reconcile_errors_total');

/** CPU seconds (user + system) the process has used so far. */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

/** A field of /proc/<pid>/status in MiB (VmHWM: the peak RSS so far; VmRSS: now). */
export function statusMiB(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
  return kb / 1024;
}
export const peakRssMiB = (pid: number) => statusMiB(pid, 'VmHWM');

export interface Operator {
  proc: ChildProcess;
  pid: number;
  metricsPort: number;
  /** Its stderr so far, when the variant captures it. */
  stderr: () => string;
}

/** `env` without the variables set to undefined (a variant's way to say "not inherited"). */
export const childEnv = (env: NodeJS.ProcessEnv): NodeJS.ProcessEnv =>
  Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined));

/** The image's process: no compile cache, whatever this shell's environment says. */
export const NO_COMPILE_CACHE = { NODE_COMPILE_CACHE: undefined } as const;

export interface StartVariant {
  name: string;
  /** main.ts or the installed bin (relative to `cwd` when given). */
  entry: string;
  env?: NodeJS.ProcessEnv;
  /** What runs the entry (default: this checkout's Node), e.g. another Node behind `unshare`. */
  command?: string[];
  cwd?: string;
  /** Only the environment given here (an image's), not this shell's. */
  ownEnv?: boolean;
  /** One unmeasured start first fills its compile cache ($XDG_CACHE_HOME/retrokube/compile-cache). */
  warmUp?: boolean;
  /** Keep its stderr (Operator.stderr) rather than pass it through. */
  captureStderr?: boolean;
}

/** `retrokube operator` from `v.entry` (main.ts or the installed bin), once ready (/readyz 200). */
export async function startOperator(
  v: StartVariant,
  kubeconfig: string,
  namespace: string,
): Promise<Operator> {
  const { entry } = v;
  const metricsPort = await freePort();
  const [cmd, ...pre] = v.command ?? [join(REPO_ROOT, 'node_modules/.bin/node')];
  // A captured stderr goes to a file: Node's native debug lines are lost when they meet a full pipe.
  const errFile = v.captureStderr ? join(mkdtempSync(join(tmpdir(), 'rk-bench-stderr-')), 'stderr') : '';
  const errFd = errFile ? openSync(errFile, 'w') : 'inherit';
  const proc = spawn(
    cmd as string,
    [
      ...pre,
      entry,
      'operator',
      ...['--kubeconfig', kubeconfig],
      ...['--metrics-bind-address', `127.0.0.1:${metricsPort}`, '--health-port', '0'],
      ...['--namespace', namespace],
    ],
    {
      stdio: ['ignore', 'inherit', errFd],
      cwd: v.cwd,
      env: childEnv({ ...(v.ownEnv ? {} : process.env), RETROKUBE_LOG_LEVEL: 'warn', ...v.env }),
    },
  );
  if (typeof errFd === 'number') closeSync(errFd);
  const stderr = () => (errFile ? readFileSync(errFile, 'utf8') : '');
  const t0 = performance.now();
  // Started = ready: /readyz answers 200 once the controllers run on synced caches (their first
  // LISTs done, over TLS), which is later than /metrics, served before the controllers start.
  for (;;) {
    if (proc.exitCode !== null)
      throw new Error(`${entry} operator exited with ${proc.exitCode} before ready`);
    const ok = await fetch(`http://127.0.0.1:${metricsPort}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return { proc, pid: proc.pid as number, metricsPort, stderr };
    if (performance.now() - t0 > LIMITS.startTimeoutMs) throw new Error(`${entry}: not ready in time`);
    await sleep(100);
  }
}

/** SIGTERM, then SIGKILL after the grace; resolves once it has exited (a clean exit writes the compile cache). */
export async function stopOperator(op: Operator): Promise<void> {
  if (op.proc.exitCode !== null || op.proc.signalCode !== null) return;
  const exited = new Promise((r) => op.proc.once('exit', r));
  op.proc.kill('SIGTERM');
  const timer = setTimeout(() => op.proc.kill('SIGKILL'), LIMITS.stopTimeoutMs);
  await exited;
  clearTimeout(timer);
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
export const mib = (x: number) => +x.toFixed(1);

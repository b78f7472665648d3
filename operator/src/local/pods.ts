// Running a rendered pod's container on this machine, as the kubelet would run it in a cluster:
// the image's entrypoint is the retrokube CLI (here: this checkout's), the container's own args
// with volume paths mapped to local folders, and its env resolved — secretKeyRef values from a
// lookup (the file's Secrets, or the API server's in tests), fieldRefs from the pod, $(VAR) expanded.
// `retrokube up FILE` runs a SheetCluster this way; the envtest suite plays the kubelet with it.
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const LIMITS = {
  outputChars: 64 * 1024, // the newest output kept per process (for errors and the URL banner)
  stopGraceMs: 5_000, // SIGTERM, then SIGKILL after this long
} as const;

const MAIN = fileURLToPath(new URL('../cli/main.ts', import.meta.url));

// biome-ignore lint/suspicious/noExplicitAny: a Pod template's container, navigated freely
export type Container = any;

export interface EnvSources {
  secret(ref: { name: string; key: string }): string | Promise<string>;
  /** fieldRef paths (metadata.labels['…'], status.podIP). */
  fields: Record<string, string>;
  /** resourceFieldRef resource (limits.cpu, limits.memory) → the value in its divisor's unit. */
  resources?: Record<string, string>;
}

/** The container's env as the kubelet resolves it. */
export async function resolveEnv(c: Container, src: EnvSources): Promise<Record<string, string>> {
  const env: Record<string, string> = {};
  for (const e of (c.env ?? []) as Container[]) {
    if (e.value !== undefined)
      env[e.name] = String(e.value).replace(
        /\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g,
        (_m, v: string) => env[v] ?? '',
      );
    else if (e.valueFrom?.secretKeyRef) env[e.name] = await src.secret(e.valueFrom.secretKeyRef);
    else if (e.valueFrom?.fieldRef) env[e.name] = src.fields[e.valueFrom.fieldRef.fieldPath] ?? '';
    else if (e.valueFrom?.resourceFieldRef)
      env[e.name] = src.resources?.[e.valueFrom.resourceFieldRef.resource] ?? '';
  }
  return env;
}

/** Args with every path under a volume mount moved to its local folder (by mount path). */
export function localArgs(
  c: Container,
  mounts: Record<string, string>,
  replace: Record<string, string> = {},
): string[] {
  const given = c.args as string[];
  return given.map((a, i) => {
    const flag = given[i - 1];
    if (flag !== undefined && replace[flag] !== undefined) return replace[flag];
    for (const vm of (c.volumeMounts ?? []) as Array<{ name: string; mountPath: string }>) {
      const local = mounts[vm.name];
      if (local !== undefined && (a === vm.mountPath || a.startsWith(`${vm.mountPath}/`)))
        return local + a.slice(vm.mountPath.length);
    }
    return a;
  });
}

export interface LocalProcess {
  readonly proc: ChildProcess;
  output(): string;
  /** Resolves with the first match of `re` in the output; rejects if the process exits first. */
  waitFor(re: RegExp, timeoutMs: number): Promise<RegExpExecArray>;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** Starts the CLI with these args and env (nothing else from this environment but PATH and HOME). */
export function runCli(args: string[], env: Record<string, string>): LocalProcess {
  const proc = spawn(process.execPath, [MAIN, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (b: Buffer) => {
    out = (out + b.toString()).slice(-LIMITS.outputChars);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  return {
    proc,
    output: () => out,
    waitFor: (re, timeoutMs) =>
      new Promise((resolve, reject) => {
        const t = setTimeout(
          () => done(new Error(`no ${re} within ${timeoutMs} ms: ${out.slice(-500)}`)),
          timeoutMs,
        );
        const look = () => {
          const m = re.exec(out);
          if (m) done(undefined, m);
        };
        const onExit = () =>
          done(new Error(`exited (${proc.exitCode ?? proc.signalCode}): ${out.slice(-500)}`));
        const done = (err?: Error, m?: RegExpExecArray) => {
          clearTimeout(t);
          proc.stdout?.off('data', look);
          proc.off('exit', onExit);
          if (err) reject(err);
          else resolve(m as RegExpExecArray);
        };
        proc.stdout?.on('data', look);
        proc.once('exit', onExit);
        look();
      }),
    stop: async (signal: NodeJS.Signals = 'SIGTERM') => {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const kill = setTimeout(() => proc.kill('SIGKILL'), LIMITS.stopGraceMs);
      proc.kill(signal);
      await exited;
      clearTimeout(kill);
    },
  };
}

// The process runtime: a pod is a command line run by /bin/sh in its own process group.
// Environment: the order's env plus SK_POD, SK_NODE, SK_DEPLOYMENT, and PORT / SK_PORT_<container>
// for assigned host ports (a process shares the host's network, so it listens on the host port).
// Secret files are written to the host and named by SK_SECRET_<NAME>=<host file> (a process cannot
// have a file mounted at the path a container would see).

import { spawn } from 'node:child_process';
import { closeSync } from 'node:fs';
import { openLog } from '../workdir.ts';
import type { Exit, PodSpec, RunningPod, Runtime } from './types.ts';

/** Why the process runtime is off unless a person turns it on by name. */
export const PROCESS_OPT_IN =
  'the process runtime runs the command of any deployment with image "process" through /bin/sh as this user; offer it only on purpose: retrokube sheets node --allow-process';

export function processEnv(spec: PodSpec, base: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const k of ['PATH', 'HOME', 'LANG', 'TMPDIR']) if (base[k]) env[k] = String(base[k]);
  Object.assign(env, spec.env, { SK_POD: spec.pod, SK_NODE: spec.node, SK_DEPLOYMENT: spec.deployment });
  const tcp = spec.ports.find((p) => p.proto === 'tcp');
  if (tcp) env.PORT = String(tcp.host);
  for (const p of spec.ports)
    env[`SK_PORT_${p.container}${p.proto === 'udp' ? '_UDP' : ''}`] = String(p.host);
  for (const s of spec.secretFiles) {
    const name = s.path.split('/').filter(Boolean).pop() ?? 'secret';
    env[`SK_SECRET_${name.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`] = s.file;
  }
  return env;
}

export class ProcessRuntime implements Runtime {
  readonly name = 'process' as const;

  async start(spec: PodSpec): Promise<RunningPod> {
    if (spec.command.trim() === '') throw new Error(`pod ${spec.pod}: a process pod needs a command`);
    const fd = openLog(spec.logFile);
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn('/bin/sh', ['-c', spec.command], {
        env: processEnv(spec),
        stdio: ['ignore', fd, fd],
        detached: true, // own process group: stop() signals the shell and everything it started
      });
    } finally {
      closeSync(fd);
    }
    const exited = new Promise<Exit>((resolve) => {
      child.once('error', (e) => resolve({ code: 127, message: `cannot start: ${e.message}` }));
      child.once('exit', (code, signal) =>
        resolve(
          signal
            ? { code: 128 + (signalNumber(signal) ?? 0), message: `killed by ${signal}` }
            : { code: code ?? 0 },
        ),
      );
    });
    const pid = child.pid;
    return {
      id: `proc-${pid ?? 'none'}`,
      exited,
      async stop(graceMs: number) {
        if (pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
        const kill = (sig: NodeJS.Signals) => {
          try {
            process.kill(-pid, sig);
          } catch {
            // already gone
          }
        };
        kill('SIGTERM');
        const t = setTimeout(() => kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(t);
      },
    };
  }
}

function signalNumber(sig: NodeJS.Signals): number | undefined {
  const table: Partial<Record<NodeJS.Signals, number>> = {
    SIGHUP: 1,
    SIGINT: 2,
    SIGKILL: 9,
    SIGTERM: 15,
    SIGSEGV: 11,
    SIGABRT: 6,
  };
  return table[sig];
}

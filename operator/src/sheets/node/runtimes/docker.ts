// The docker runtime: the reference kubelet's `docker run` (spec §4.2) — container `sk_<pod>`,
// labels sheeternetes=1 / .pod / .node / .spec, the cluster network with the deployment as network
// alias (round-robin DNS per deployment), --cpus/--memory from the requests, -e per env item,
// read-only secret mounts, -p per assigned port, and `sh -c "<command>"` when a command is set.
// UNEXERCISED here: no Docker engine runs on this machine; the argument construction is a pure
// function and is tested; the runtime is enabled only when `docker version` answers.

import { spawn, spawnSync } from 'node:child_process';
import type { Exit, PodSpec, RunningPod, Runtime } from './types.ts';

export const LIMITS = {
  probeMs: 5_000, // `docker version` must answer within this for the runtime to count as present
} as const;

export interface DockerOptions {
  network: string; // SK_NET, default "sheeternetes"
  publishAddr?: string; // SK_PUBLISH_ADDR
}

export function containerName(pod: string): string {
  return `sk_${pod}`;
}

// A Docker image reference: registry/name[:tag][@digest]. It must start with a letter or digit —
// a value from the sheet such as "--privileged" would otherwise be read by `docker run` as a flag.
const IMAGE_REF = /^[A-Za-z0-9][A-Za-z0-9._/:@-]{0,254}$/;

/** Why an image from the sheet cannot be handed to `docker run`, or undefined if it can. */
export function imageProblem(image: string): string | undefined {
  if (image.startsWith('-'))
    return `image "${image}" starts with "-": docker would read it as an option; name an image (e.g. nginx:alpine)`;
  if (!IMAGE_REF.test(image))
    return `image "${image}" is not a Docker image reference (letters, digits and . _ / : @ - only, starting with a letter or digit)`;
  return undefined;
}

/**
 * The `docker run` arguments for one pod. Options end with `--`, so nothing taken from the sheet
 * after it (image, command) can ever become an option; a bad image reference throws.
 */
export function dockerRunArgs(spec: PodSpec, opts: DockerOptions): string[] {
  const problem = imageProblem(spec.image);
  if (problem) throw new Error(problem);
  const args = ['run', '-d', '--name', containerName(spec.pod)];
  args.push('--label', 'sheeternetes=1');
  args.push('--label', `sheeternetes.pod=${spec.pod}`);
  args.push('--label', `sheeternetes.node=${spec.node}`);
  args.push('--label', `sheeternetes.spec=${spec.specHash}`);
  args.push('--network', opts.network, '--network-alias', spec.deployment);
  if (spec.cpuReq > 0) args.push('--cpus', (spec.cpuReq / 1000).toFixed(3));
  if (spec.memReq > 0) args.push('--memory', `${spec.memReq}m`);
  for (const [k, v] of Object.entries(spec.env)) args.push('-e', `${k}=${v}`);
  for (const s of spec.secretFiles) args.push('-v', `${s.file}:${s.path}:ro`);
  for (const p of spec.ports) {
    args.push('-p', `${opts.publishAddr ? `${opts.publishAddr}:` : ''}${p.host}:${p.container}/${p.proto}`);
  }
  args.push('--', spec.image);
  if (spec.command.trim() !== '') args.push('sh', '-c', spec.command);
  return args;
}

export function dockerAvailable(): boolean {
  const r = spawnSync('docker', ['version', '--format', '{{.Server.Version}}'], {
    timeout: LIMITS.probeMs,
    encoding: 'utf8',
  });
  return r.status === 0 && r.stdout.trim() !== '';
}

function docker(args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    const c = spawn('docker', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    c.stdout.on('data', (b: Buffer) => {
      out += b.toString();
    });
    c.stderr.on('data', (b: Buffer) => {
      out += b.toString();
    });
    c.on('error', (e) => resolve({ code: 127, out: e.message }));
    c.on('exit', (code) => resolve({ code: code ?? 1, out: out.trim() }));
  });
}

export class DockerRuntime implements Runtime {
  readonly name = 'docker' as const;
  private readonly opts: DockerOptions;
  constructor(opts: DockerOptions) {
    this.opts = opts;
  }

  async start(spec: PodSpec): Promise<RunningPod> {
    const name = containerName(spec.pod);
    await docker(['network', 'create', this.opts.network]); // exists already → harmless error
    await docker(['rm', '-f', name]);
    const run = await docker(dockerRunArgs(spec, this.opts));
    if (run.code !== 0) throw new Error(`docker run ${name} failed: ${run.out}`);
    const id = run.out.split('\n').pop() ?? name;
    const exited = docker(['wait', name]).then(
      (w): Exit =>
        w.code === 0 ? { code: Number(w.out) || 0 } : { code: 1, message: `docker wait: ${w.out}` },
    );
    return {
      id,
      exited,
      async stop() {
        await docker(['rm', '-f', name]);
        await exited;
      },
    };
  }
}

// The docker runtime: the reference kubelet's `docker run` (spec §4.2) — container `sk_<pod>`,
// labels sheeternetes=1 / .pod / .node / .spec, the cluster network with the deployment as network
// alias (round-robin DNS per deployment), --cpus/--memory from the requests, -e per env item,
// read-only secret mounts, -p per assigned port, and `sh -c "<command>"` when a command is set.
// Beyond the reference: the daemon is asked first (an absent one is a reason on the pod, not a
// crash loop), the image is pulled on its own (a failed pull is ErrImagePull, not a failed start),
// the ports reported are the ones docker really published, and a restarted agent adopts the
// containers it finds running instead of starting them again.
// Proven against a real dockerd by test/e2e/sheets-docker.test.ts.

import { spawn } from 'node:child_process';
import { type Adopted, type Exit, type PodSpec, PodWait, type RunningPod, type Runtime } from './types.ts';

export const LIMITS = {
  probeMs: 5_000, // `docker version` must answer within this for the daemon to count as there
  pullMs: 300_000, // one image pull; a registry that never answers is an ErrImagePull after this
  commandMs: 60_000, // any other docker command (run, rm, ps, port)
  outputBytes: 64 * 1024, // what we keep of one docker command's output
} as const;

export interface DockerOptions {
  network: string; // SK_NET, default "sheeternetes"
  publishAddr?: string; // SK_PUBLISH_ADDR
  /** DOCKER_HOST for every docker command (default: the agent's own environment). */
  host?: string;
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
 * after it (image, command) can ever become an option; a bad image reference throws. The image is
 * pulled beforehand (`--pull never`), so a failed pull is told apart from a failed start.
 */
export function dockerRunArgs(spec: PodSpec, opts: DockerOptions): string[] {
  const problem = imageProblem(spec.image);
  if (problem) throw new Error(problem);
  const args = ['run', '-d', '--pull', 'never', '--name', containerName(spec.pod)];
  args.push('--label', 'sheeternetes=1');
  args.push('--label', `sheeternetes.pod=${spec.pod}`);
  args.push('--label', `sheeternetes.node=${spec.node}`);
  args.push('--label', `sheeternetes.spec=${spec.specHash}`);
  args.push('--label', `sheeternetes.deployment=${spec.deployment}`);
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

/** The last meaningful line of docker's output (its error), without the "Error response…" noise. */
export function dockerError(out: string): string {
  const lines = out
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const last = lines.at(-1) ?? 'no output';
  return last.replace(/^(docker: )?Error response from daemon: /, '').slice(0, 300);
}

interface Result {
  code: number;
  out: string;
}

/** One docker command (never through a shell), bounded in time and output. */
export function dockerCommand(
  args: string[],
  o: { host?: string; timeoutMs?: number } = {},
): Promise<Result> {
  return new Promise((resolve) => {
    const env = o.host ? { ...process.env, DOCKER_HOST: o.host } : process.env;
    const c = spawn('docker', args, { stdio: ['ignore', 'pipe', 'pipe'], env });
    let out = '';
    const take = (b: Buffer) => {
      if (out.length < LIMITS.outputBytes) out += b.toString();
    };
    c.stdout.on('data', take);
    c.stderr.on('data', take);
    const timer =
      o.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            out += `\ndocker ${args[0]}: no answer in ${Math.round((o.timeoutMs ?? 0) / 1000)}s`;
            c.kill('SIGKILL');
          }, o.timeoutMs);
    c.on('error', (e) => {
      if (timer) clearTimeout(timer);
      const missing = (e as NodeJS.ErrnoException).code === 'ENOENT';
      resolve({ code: 127, out: missing ? 'the docker command is not installed on this node' : e.message });
    });
    c.on('close', (code) => {
      if (timer) clearTimeout(timer);
      resolve({ code: code ?? 1, out: out.trim() });
    });
  });
}

/** Why no Docker daemon answers (one line), or undefined when one does. */
export async function daemonProblem(host?: string): Promise<string | undefined> {
  const r = await dockerCommand(['version', '--format', '{{.Server.Version}}'], {
    host,
    timeoutMs: LIMITS.probeMs,
  });
  if (r.code === 0 && r.out.trim() !== '') return undefined;
  const where = host ?? process.env.DOCKER_HOST ?? 'unix:///var/run/docker.sock';
  return `Docker daemon unreachable at ${where}: ${dockerError(r.out)}`;
}

/** A container docker reports for this node (`docker ps`). */
export interface FoundContainer {
  id: string;
  pod: string;
  specHash: string;
  deployment: string;
  ports: string;
}

export class DockerRuntime implements Runtime {
  readonly name = 'docker' as const;
  private readonly opts: DockerOptions;
  constructor(opts: DockerOptions) {
    this.opts = opts;
  }

  private docker(args: string[], timeoutMs: number = LIMITS.commandMs): Promise<Result> {
    return dockerCommand(args, { host: this.opts.host, timeoutMs });
  }

  /** Why this runtime cannot start pods now (the daemon does not answer), or undefined. */
  problem(): Promise<string | undefined> {
    return daemonProblem(this.opts.host);
  }

  // The image, pulled if the daemon does not have it; a failed pull waits (ErrImagePull).
  private async ensureImage(image: string): Promise<void> {
    const have = await this.docker(['image', 'inspect', '--format', '{{.Id}}', '--', image]);
    if (have.code === 0) return;
    const pull = await this.docker(['pull', '--quiet', '--', image], LIMITS.pullMs);
    if (pull.code !== 0) throw new PodWait(`ErrImagePull: ${image}: ${dockerError(pull.out)}`);
  }

  async start(spec: PodSpec): Promise<RunningPod> {
    const problem = imageProblem(spec.image);
    if (problem) throw new Error(problem);
    const down = await this.problem();
    if (down) throw new PodWait(down, true);
    await this.ensureImage(spec.image);
    const name = containerName(spec.pod);
    const net = await this.docker(['network', 'inspect', '--format', '{{.Id}}', '--', this.opts.network]);
    if (net.code !== 0) await this.docker(['network', 'create', '--', this.opts.network]); // a racing create is harmless
    await this.docker(['rm', '-f', '--', name]);
    const run = await this.docker(dockerRunArgs(spec, this.opts));
    if (run.code !== 0) throw new Error(`docker run ${name}: ${dockerError(run.out)}`);
    const id = run.out.split('\n').pop()?.trim() || name;
    return this.watch(id, await this.publishedPorts(id));
  }

  /** Running containers this node started (label sheeternetes.node), for a restarted agent to adopt. */
  async list(node: string): Promise<FoundContainer[]> {
    const r = await this.docker([
      'ps',
      '--no-trunc',
      '--filter',
      `label=sheeternetes.node=${node}`,
      '--format',
      '{{.ID}}\t{{.Label "sheeternetes.pod"}}\t{{.Label "sheeternetes.spec"}}\t{{.Label "sheeternetes.deployment"}}\t{{.Ports}}',
    ]);
    if (r.code !== 0) throw new Error(`docker ps: ${dockerError(r.out)}`);
    return r.out
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const [id = '', pod = '', specHash = '', deployment = '', ports = ''] = l.split('\t');
        return { id, pod, specHash, deployment, ports };
      })
      .filter((c) => c.id !== '' && c.pod !== '');
  }

  /** Running pods of this node, taken over: their exit is watched and stop() removes them. */
  async running(node: string): Promise<Adopted[]> {
    return (await this.list(node)).map((c) => ({
      pod: c.pod,
      specHash: c.specHash,
      deployment: c.deployment,
      run: this.watch(c.id, c.ports),
    }));
  }

  // What docker really published, in its `docker ps` form (the text the reference kubelet reports).
  private async publishedPorts(id: string): Promise<string> {
    const r = await this.docker(['ps', '--no-trunc', '--filter', `id=${id}`, '--format', '{{.Ports}}']);
    return r.code === 0 ? r.out.trim() : '';
  }

  private watch(id: string, ports: string): RunningPod {
    // No time limit: a pod runs as long as it runs.
    const exited = dockerCommand(['wait', id], { host: this.opts.host }).then((w): Exit => {
      if (w.code === 0) return { code: Number(w.out.split('\n').pop()) || 0 };
      return { code: 1, message: `lost the container: docker wait: ${dockerError(w.out)}` };
    });
    const docker = this.docker.bind(this);
    return {
      id,
      ports,
      exited,
      async stop() {
        await docker(['rm', '-f', '--', id]);
        await exited;
      },
    };
  }
}

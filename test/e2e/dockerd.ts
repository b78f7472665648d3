// A real Docker daemon for one test file, owned whole: its own containerd, data root, exec root,
// socket and bridge under one temporary folder, stopped and removed afterwards (also when the test
// failed). It must not touch the host's network for anyone else — the real test node (hack/node-up.sh)
// shares this machine's iptables — so it runs with --iptables=false --ip-forward=false
// --bridge=none: no FORWARD policy change, no NAT, no DOCKER chains, no docker0. Published ports
// go through docker-proxy (a userland listener), pods reach each other on the network's own bridge.
// Debian packages: docker.io (dockerd, docker-proxy), containerd, runc (hack/setup.ts).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { dockerCommand } from '../../operator/src/sheets/node/runtimes/docker.ts';

export const LIMITS = {
  readyMs: 90_000, // dockerd answering `docker version` (cold start ~2 s idle, more at load 20)
  stopMs: 20_000, // SIGTERM → SIGKILL for dockerd and containerd
} as const;

export interface Dockerd {
  /** DOCKER_HOST for this daemon. */
  host: string;
  dir: string;
  /** The user network pods join (the agent's --network), and its Linux bridge. */
  network: string;
  bridge: string;
  subnet: string;
  docker(...args: string[]): Promise<{ code: number; out: string }>;
  log(): string;
  stop(): Promise<void>;
}

/** Why a real dockerd cannot run here (undefined: it can). */
export function dockerdMissing(): string | undefined {
  if (process.getuid?.() !== 0) return 'a Docker daemon needs root (namespaces, mounts, a bridge)';
  for (const c of ['dockerd', 'containerd', 'docker', 'runc', 'docker-proxy']) {
    try {
      execFileSync('sh', ['-c', `command -v ${c}`], { stdio: 'ignore' });
    } catch {
      return `${c} is missing: apt-get install docker.io (npm run setup installs it)`;
    }
  }
  return undefined;
}

/** The host's network settings a Docker daemon is known to change (for the before/after check). */
export function hostNetState(): { forwardPolicy: string; ipForward: string; dockerRules: string[] } {
  const save = execFileSync('iptables-save', [], { encoding: 'utf8' });
  const policy = /^:FORWARD (\S+)/m.exec(save.split('*filter')[1] ?? '')?.[1] ?? 'ACCEPT';
  return {
    forwardPolicy: policy,
    ipForward: readFileSync('/proc/sys/net/ipv4/ip_forward', 'utf8').trim(),
    dockerRules: save.split('\n').filter((l) => /docker|DOCKER/.test(l)),
  };
}

function waitExit(p: ChildProcess, ms: number): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      p.kill('SIGKILL');
    }, ms);
    p.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    p.kill('SIGTERM');
  });
}

/** A free /24 in 10.213.0.0/16 (not routed on this machine) and a bridge name of ours. */
function pickSubnet(): { subnet: string; bridge: string } {
  const routes = execFileSync('ip', ['-4', 'route'], { encoding: 'utf8' });
  for (let i = 0; i < 250; i++) {
    const n = (process.pid + i) % 250;
    if (!routes.includes(`10.213.${n}.`)) return { subnet: `10.213.${n}.0/24`, bridge: `rkdk${n}` };
  }
  throw new Error('no free /24 in 10.213.0.0/16 for the docker network');
}

export async function startDockerd(): Promise<Dockerd> {
  const dir = mkdtempSync('/tmp/rk-dockerd-');
  const host = `unix://${dir}/docker.sock`;
  const { subnet, bridge } = pickSubnet();
  const network = 'sheeternetes';
  let out = '';
  const procs: ChildProcess[] = [];
  const run = (name: string, cmd: string, args: string[]) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const take = (b: Buffer) => {
      if (out.length < 200_000) out += `[${name}] ${b.toString()}`;
    };
    p.stdout?.on('data', take);
    p.stderr?.on('data', take);
    procs.push(p);
    return p;
  };
  const docker = (...args: string[]) => dockerCommand(args, { host, timeoutMs: 120_000 });
  const stop = async () => {
    // Containers first (their shims and mounts), then the network, then the daemons.
    const ids = await docker('ps', '-aq');
    if (ids.code === 0 && ids.out) await docker('rm', '-f', ...ids.out.split('\n'));
    await docker('network', 'rm', network);
    for (const p of [...procs].reverse()) await waitExit(p, LIMITS.stopMs);
    // Anything still under our folder: shims by pid (their command line names the folder), mounts.
    for (const pid of readdirPids()) {
      try {
        if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dir)) process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .map((l) => l.split(' ')[4] ?? '')
      .filter((m) => m.startsWith(dir))
      .sort((a, b) => b.length - a.length);
    for (const m of mounts) execFileSync('umount', ['-l', m], { stdio: 'ignore' });
    try {
      execFileSync('ip', ['link', 'del', bridge], { stdio: 'ignore' });
    } catch {
      // removed with the network
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    mkdirSync(path.join(dir, 'containerd'));
    writeFileSync(
      path.join(dir, 'containerd.toml'),
      [
        'version = 2',
        `root = "${dir}/containerd/root"`,
        `state = "${dir}/containerd/state"`,
        // Only what dockerd uses: no CRI plugin (the test node has its own containerd for that).
        'disabled_plugins = ["io.containerd.grpc.v1.cri"]',
        '[grpc]',
        `  address = "${dir}/containerd.sock"`,
        '[ttrpc]',
        `  address = "${dir}/containerd.sock.ttrpc"`,
        '',
      ].join('\n'),
    );
    writeFileSync(path.join(dir, 'daemon.json'), '{}\n'); // never the host's /etc/docker/daemon.json
    run('containerd', 'containerd', ['--config', path.join(dir, 'containerd.toml')]);
    const end = Date.now() + LIMITS.readyMs;
    while (!existsSync(path.join(dir, 'containerd.sock'))) {
      if (Date.now() > end) throw new Error(`containerd did not start:\n${out.slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    run('dockerd', 'dockerd', [
      '--config-file',
      path.join(dir, 'daemon.json'),
      '--containerd',
      path.join(dir, 'containerd.sock'),
      '--data-root',
      path.join(dir, 'data'),
      '--exec-root',
      path.join(dir, 'exec'),
      '--pidfile',
      path.join(dir, 'dockerd.pid'),
      '--host',
      host,
      '--iptables=false',
      '--ip-masq=false',
      '--ip-forward=false',
      '--bridge=none',
      '--default-address-pool',
      `base=${subnet},size=24`,
    ]);
    for (;;) {
      const v = await dockerCommand(['version', '--format', '{{.Server.Version}}'], {
        host,
        timeoutMs: 5_000,
      });
      if (v.code === 0) break;
      if (Date.now() > end || procs.some((p) => p.exitCode !== null))
        throw new Error(`dockerd did not answer: ${v.out}\n${out.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    const net = await docker(
      'network',
      'create',
      '--subnet',
      subnet,
      '-o',
      `com.docker.network.bridge.name=${bridge}`,
      network,
    );
    if (net.code !== 0) throw new Error(`docker network create: ${net.out}`);
  } catch (e) {
    await stop();
    throw e;
  }
  return { host, dir, network, bridge, subnet, docker, log: () => out, stop };
}

function readdirPids(): number[] {
  return execFileSync('ls', ['/proc'], { encoding: 'utf8' })
    .split('\n')
    .filter((n) => /^\d+$/.test(n))
    .map(Number);
}

/**
 * A small HTTP image made here (no registry): busybox-static's httpd serving /www, imported into
 * the daemon as NAME. Its default command serves /www on port 80.
 */
export async function importHttpImage(d: Dockerd, name: string): Promise<void> {
  const root = path.join(d.dir, 'image-root');
  mkdirSync(path.join(root, 'bin'), { recursive: true });
  mkdirSync(path.join(root, 'www'));
  mkdirSync(path.join(root, 'tmp'));
  execFileSync('cp', ['/bin/busybox', path.join(root, 'bin/busybox')]);
  for (const a of ['sh', 'httpd', 'wget', 'nslookup', 'cat', 'echo', 'sleep', 'env', 'hostname'])
    execFileSync('ln', ['-s', 'busybox', path.join(root, 'bin', a)]);
  writeFileSync(path.join(root, 'www/index.html'), 'sheeternetes pod\n');
  const tar = path.join(d.dir, 'image.tar');
  execFileSync('tar', ['-C', root, '--owner=0', '--group=0', '-cf', tar, '.']);
  const r = await d.docker('import', '--change', 'CMD ["httpd","-f","-p","80","-h","/www"]', tar, name);
  if (r.code !== 0) throw new Error(`docker import: ${r.out}`);
  rmSync(root, { recursive: true, force: true });
  rmSync(tar, { force: true });
}

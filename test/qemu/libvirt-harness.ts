// A real libvirtd (our risc5-patched build, qemu/libvirt/build.sh) for tests, shaped like the
// daemon in KubeVirt's virt-launcher: unprivileged (session mode, every path under a temp
// folder), in a network namespace of its own (a pod's), whose name server file maps the air's
// Service name to the relay on the host side of a veth pair. qemu-system-risc5 is found on its
// PATH, as libvirt finds emulators.
//
// Why a user namespace: the test runs as root, and a root libvirtd is the system daemon with
// compiled-in paths shared by every run; mapped to uid 1000 it is a session daemon that keeps
// all state in the temp folder while still reading the cache under /root.

import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from './qemu-harness.ts';

export const LIBVIRT_LIMITS = {
  daemonStartMs: 30_000, // libvirtd probes the emulator (capabilities) before it answers; starved, slow
  virshTimeoutMs: 120_000, // virsh start waits for QEMU's monitor; generous on 2 shared cores
  sessionUid: 1000, // the unprivileged user libvirtd runs as inside its user namespace
} as const;

/** The patched libvirt's install prefix, or null with the reason. */
export function libvirtBuild(): { prefix: string | null; reason: string } {
  const script = join(REPO, 'qemu/libvirt/build.sh');
  const prefix = execFileSync('bash', [script, '--print-path'], { encoding: 'utf8' }).trim();
  if (spawnSync('bash', [script, '--check']).status === 0) return { prefix, reason: '' };
  return { prefix: null, reason: `the patched libvirt is not built (${prefix}); run qemu/libvirt/build.sh` };
}

/** A network namespace with a veth to the host; `hosts` maps names inside it (its /etc/hosts). */
export interface Netns {
  name: string;
  hostAddress: string;
  close(): void;
}

export function createNetns(hosts: Record<string, 'host'>): Netns {
  const id = process.pid % 100_000;
  const name = `rk-lv-${id}`;
  const [outer, inner] = [`rkl${id}o`, `rkl${id}i`];
  const net = `10.231.${id % 250}`;
  const hostAddress = `${net}.1`;
  const ip = (...args: string[]) => execFileSync('ip', args, { stdio: 'pipe' });
  const close = () => {
    spawnSync('ip', ['link', 'del', outer], { stdio: 'ignore' });
    spawnSync('ip', ['netns', 'del', name], { stdio: 'ignore' });
    rmSync(`/etc/netns/${name}`, { recursive: true, force: true });
  };
  close(); // what an earlier run with this pid left
  try {
    ip('netns', 'add', name);
    ip('link', 'add', outer, 'type', 'veth', 'peer', 'name', inner, 'netns', name);
    ip('addr', 'add', `${hostAddress}/30`, 'dev', outer);
    ip('link', 'set', outer, 'up');
    ip('-n', name, 'addr', 'add', `${net}.2/30`, 'dev', inner);
    ip('-n', name, 'link', 'set', inner, 'up');
    ip('-n', name, 'link', 'set', 'lo', 'up');
    // `ip netns exec` mounts /etc/netns/<name>/hosts over /etc/hosts: the pod's DNS, here.
    mkdirSync(`/etc/netns/${name}`, { recursive: true });
    const lines = Object.keys(hosts).map((h) => `${hostAddress} ${h}`);
    writeFileSync(`/etc/netns/${name}/hosts`, `127.0.0.1 localhost\n${lines.join('\n')}\n`);
  } catch (e) {
    close();
    throw e;
  }
  return { name, hostAddress, close };
}

export interface Libvirtd {
  uri: string;
  dir: string;
  /** Runs virsh against this daemon; throws with virsh's own message when it fails. */
  virsh(...args: string[]): string;
  /** Runs virsh and returns its status and output, failure included. */
  tryVirsh(...args: string[]): { status: number | null; output: string };
  log(): string;
  stop(): Promise<void>;
}

/** Starts libvirtd in session mode for uid 1000 in the namespace, all its state under dir. */
export async function startLibvirtd(opts: {
  prefix: string;
  qemuDir: string;
  dir: string;
  netns: string;
}): Promise<Libvirtd> {
  const d = (p: string) => join(opts.dir, p);
  for (const p of ['home', 'run', 'config/libvirt', 'cache'])
    mkdirSync(d(p), { recursive: true, mode: 0o700 });
  // QEMU's output into a file per domain (no virtlogd to start), read by the test on failure.
  writeFileSync(d('config/libvirt/qemu.conf'), 'stdio_handler = "file"\n');
  const uid = String(LIBVIRT_LIMITS.sessionUid);
  const proc: ChildProcess = spawn(
    'ip',
    [
      'netns',
      'exec',
      opts.netns,
      'unshare',
      '--user',
      `--map-user=${uid}`,
      `--map-group=${uid}`,
      'env',
      '-i',
      `PATH=${opts.qemuDir}:/usr/bin:/bin`,
      `HOME=${d('home')}`,
      `XDG_RUNTIME_DIR=${d('run')}`,
      `XDG_CONFIG_HOME=${d('config')}`,
      `XDG_CACHE_HOME=${d('cache')}`,
      join(opts.prefix, 'sbin/libvirtd'),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  const keep = (b: Buffer) => {
    out = (out + b.toString('utf8')).slice(-32_768);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  const exited = new Promise<void>((ok) => proc.once('exit', () => ok()));
  const socket = d('run/libvirt/libvirt-sock');
  const uri = `qemu+unix:///session?socket=${socket}`;
  const run = (args: string[]) =>
    spawnSync(join(opts.prefix, 'bin/virsh'), ['-c', uri, ...args], {
      encoding: 'utf8',
      timeout: LIBVIRT_LIMITS.virshTimeoutMs,
    });
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
    const t = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(t);
  };
  const deadline = Date.now() + LIBVIRT_LIMITS.daemonStartMs;
  while (!(existsSync(socket) && run(['uri']).status === 0)) {
    if (proc.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`libvirtd did not start: ${out.trim() || 'no output'}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    uri,
    dir: opts.dir,
    virsh(...args) {
      const r = run(args);
      if (r.status !== 0) throw new Error(`virsh ${args[0]}: ${(r.stderr || r.stdout).trim()}`);
      return r.stdout;
    },
    tryVirsh(...args) {
      const r = run(args);
      return { status: r.status, output: `${r.stdout}${r.stderr}` };
    },
    log: () => out,
    stop,
  };
}

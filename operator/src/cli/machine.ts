// `retrokube machine run DISK`: boot a RISC5 machine on a .dsk (a copy unless --in-place),
// optionally on an air, with a VNC server, a screenshot, and commands typed or fed to RS232.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { expandKeyReference } from '../machine/boot-key.ts';
import { buildKubeDisk } from '../machine/kube-disk.ts';
import { watchLiveCommands } from '../machine/live-commands.ts';
import { LIVE_CONFIGMAP_KEY, parseConfigMapRef } from '../machine/live-configmap-ref.ts';
import { fillPayload, PAYLOAD_LIMITS } from '../machine/payload.ts';
import { snapshotToPng } from '../machine/png.ts';
import { type RfbServer, startRfbServer } from '../machine/rfb/server.ts';
import { MachineRunner, type RunnerOptions } from '../machine/runner.ts';
import { missingModules, StatusFileWriter } from '../machine/status-file.ts';
import { privateSecret } from '../util/private-file.ts';
import { readSecretFile } from '../util/secret-option.ts';

interface RunOpts {
  commands?: string;
  exec: string[];
  air?: string;
  airPort?: string;
  vnc?: string;
  vncHost: string;
  vncPasswordFile?: string;
  /** --vnc-no-password (Commander negates only options that start with --no-: this one is a flag). */
  vncNoPassword?: boolean;
  insecureVnc?: boolean;
  screenshot?: string;
  memory?: string;
  deterministic?: boolean;
  jit?: boolean;
  rom?: boolean;
  inPlace?: boolean;
  for?: string;
  json?: boolean;
  statusFile?: string;
  liveCommands?: string;
  liveConfigmap?: string;
}

/** "relay:7524" / "127.0.0.1:7524" / "[::1]:7524" → host and port. */
export function parseHostPort(text: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(text.trim());
  const port = m ? Number(m[3]) : Number.NaN;
  if (!m || port < 1 || port > 65535)
    throw new Error(`--air "${text}" is not HOST:PORT (for example 127.0.0.1:7524)`);
  return { host: m[1] ?? m[2], port };
}

function intOption(name: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new Error(`${name} must be a whole number from ${min} to ${max}, got "${text}"`);
  return n;
}

async function run(disk: string, o: RunOpts): Promise<void> {
  // $(RK_KEY) in the commands becomes the key from the environment, checked as hex first.
  const commands = o.commands === undefined ? undefined : expandKeyReference(o.commands);
  const liveRef = o.liveConfigmap === undefined ? undefined : parseConfigMapRef(o.liveConfigmap);
  const opts: RunnerOptions = {
    disk,
    inPlace: o.inPlace ?? false,
    clock: o.deterministic ? 'deterministic' : 'realtime',
    commands,
    jit: o.jit ?? true,
    boot: o.rom ? 'assembled' : 'native',
  };
  if (o.memory !== undefined) opts.memoryMiB = intOption('--memory', o.memory, 1, 32);
  if (o.air !== undefined) {
    opts.air = parseHostPort(o.air);
    if (o.airPort !== undefined) opts.air.localPort = intOption('--air-port', o.airPort, 0, 65535);
  }
  const vncPort = o.vnc === undefined ? undefined : intOption('--vnc', o.vnc, 0, 65535);
  const screen = vncPort === undefined ? undefined : vncAccess(o);
  const seconds = o.for === undefined ? undefined : Number(o.for);
  if (seconds !== undefined && !(seconds > 0))
    throw new Error(`--for must be a positive number of seconds, got "${o.for}"`);

  // The status file first of all: one left by a previous run must not speak for this one.
  const status =
    o.statusFile === undefined ? null : new StatusFileWriter(o.statusFile, { relayHost: opts.air?.host });
  if (status !== null) {
    process.once('exit', () => status.stop('the emulator exited'));
    status.setMissingModules(await missingModules(disk, commands).catch(() => []));
  }
  // Listen for Ctrl-C / SIGTERM from the start, so a stop during boot is not lost.
  let stopReason = 'finished';
  let requestStop: () => void = () => {};
  const stopRequested = new Promise<void>((resolve) => {
    requestStop = resolve;
  });
  for (const sig of ['SIGINT', 'SIGTERM'] as const)
    process.once(sig, () => {
      stopReason = sig;
      requestStop();
    });
  let m: MachineRunner;
  try {
    m = await MachineRunner.start(opts);
  } catch (err) {
    status?.stop(`could not start: ${(err as Error).message}`);
    throw err;
  }
  status?.follow(m);
  m.onSerial = (bytes) => process.stdout.write(Buffer.from(bytes));
  let vnc: RfbServer | null = null;
  let live: { stop(): void } | null = null;
  const stop = async (): Promise<void> => {
    live?.stop();
    await vnc?.close();
    const st = await m.state().catch(() => null);
    status?.stop(stopReason);
    await m.stop();
    if (o.json && st !== null) process.stdout.write(`${JSON.stringify({ disk: m.diskPath, ...st })}\n`);
  };
  try {
    if (vncPort !== undefined) {
      vnc = await startRfbServer({
        screen: m,
        input: m,
        port: vncPort,
        host: o.vncHost,
        name: `Oberon ${disk}`,
        password: screen?.password,
      });
      process.stderr.write(`VNC on ${o.vncHost}:${vnc.port}${screen?.note ?? ''}\n`);
    }
    if (m.airPort !== null) process.stderr.write(`radio on the air ${o.air} from UDP port ${m.airPort}\n`);
    const booted = await Promise.race([
      m.waitForBoot(60_000).then(() => true),
      stopRequested.then(() => false),
    ]);
    if (!booted) return;
    if (liveRef !== undefined) {
      // Loaded here: only a plane's pod watches a ConfigMap. In a pod it reads as the pod's service
      // account, without the kubeconfig library (85 MB the pod's 128Mi cannot carry); elsewhere
      // (a person's shell, tests) through the kubeconfig.
      const [{ watchLiveConfigMap }, { KubeClient }, { inClusterAuth }] = await Promise.all([
        import('../machine/live-configmap.ts'),
        import('../runtime/client.ts'),
        import('../runtime/in-cluster-auth.ts'),
      ]);
      const auth = inClusterAuth();
      live = watchLiveConfigMap({
        client: auth ? new KubeClient(auth) : KubeClient.fromDefault(),
        ...liveRef,
        key: LIVE_CONFIGMAP_KEY,
        feed: (text) => m.serialFeed(text),
        warn: (message) => process.stderr.write(`live commands: ${message}\n`),
      });
    } else if (o.liveCommands !== undefined) {
      live = watchLiveCommands({
        path: o.liveCommands,
        feed: (text) => m.serialFeed(text),
        warn: (message) => process.stderr.write(`live commands: ${message}\n`),
      });
    }
    for (const cmd of o.exec) m.runCommand(cmd);
    if (o.screenshot !== undefined) {
      await m.waitForIdle(120_000);
      writeFileSync(o.screenshot, snapshotToPng(await m.freshSnapshot()));
      process.stderr.write(`screenshot written to ${o.screenshot}\n`);
      if (vncPort === undefined && o.air === undefined && seconds === undefined) return;
    }
    if (seconds !== undefined) setTimeout(requestStop, seconds * 1000).unref();
    await stopRequested;
  } finally {
    await stop();
  }
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;

/** This user's generated VNC password: `$XDG_CONFIG_HOME/retrokube/vnc-password` (folder 0700, file 0600). */
export function vncPasswordFile(env: NodeJS.ProcessEnv = process.env): string {
  const dir = join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'retrokube');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return join(dir, 'vnc-password');
}

/**
 * Who may use the screen (#28.2, #28.11): a password by default — the given one, else this user's
 * generated one (vncPasswordFile: 0600, reused; `cat` it to see it). `--vnc-no-password` serves None, on loopback only unless
 * `--insecure-vnc` too (warned): anyone who reaches the port types into the machine.
 */
export function vncAccess(
  o: { vncPasswordFile?: string; vncNoPassword?: boolean; insecureVnc?: boolean; vncHost: string },
  env: NodeJS.ProcessEnv = process.env,
  warn: (line: string) => void = (l) => process.stderr.write(l),
): { password: string | undefined; note: string } {
  const given = vncPassword(o, env);
  if (given !== undefined) return { password: given, note: ' (VNC Authentication with the given password)' };
  if (o.vncNoPassword === true) {
    if (!LOOPBACK.test(o.vncHost) && !o.insecureVnc)
      throw new Error(
        `--vnc-host ${o.vncHost} with --vnc-no-password: anyone who reaches that address could type into the machine. Drop --vnc-no-password (a password is generated), or add --insecure-vnc if you really mean it`,
      );
    warn(
      `WARNING: VNC without a password (--vnc-no-password): anyone who reaches ${o.vncHost} can watch and type into this machine\n`,
    );
    return { password: undefined, note: ' (no password)' };
  }
  const file = vncPasswordFile(env);
  const password = privateSecret(
    file,
    () => randomBytes(6).toString('base64url'),
    (v) => /^[\x20-\x7e]{1,8}$/.test(v),
  );
  return { password, note: ` (password: first line of ${file}, mode 0600)` };
}

/** The VNC password: --vnc-password-file, else $RK_VNC_PASSWORD (a pod gets it from a Secret), else none. */
export function vncPassword(
  o: { vncPasswordFile?: string },
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  const p =
    o.vncPasswordFile !== undefined ? readSecretFile(o.vncPasswordFile, 'VNC password') : env.RK_VNC_PASSWORD;
  if (p === undefined || p === '') return undefined;
  if (!/^[\x20-\x7e]{1,8}$/.test(p))
    throw new Error(
      'the VNC password must be 1-8 printable ASCII characters (VNC Authentication uses only 8)',
    );
  return p;
}

export function registerMachineVerbs(program: Command): void {
  const machine = program.command('machine').description('RISC5 machines (Project Oberon) in TypeScript');
  machine
    .command('run')
    .description(
      'boot a machine on a .dsk image (on a temporary copy unless --in-place) and run it until Ctrl-C',
    )
    .argument('<disk>', 'Oberon disk image (.dsk)')
    .option(
      '--commands <text>',
      'text fed to the serial port from power-on (commands separated by ";", read by Boot.Run)',
    )
    .option(
      '--exec <command>',
      'type this command into System.Tool and middle-click it after boot (repeatable)',
      (v: string, acc: string[]) => [...acc, v],
      [] as string[],
    )
    .option('--air <host:port>', 'connect the radio to the air relay at HOST:PORT (UDP)')
    .option('--air-port <port>', 'local UDP port of the radio (default: any)')
    .option('--vnc <port>', 'serve the screen and input over RFB/VNC on this port (0 = any free port)')
    .option('--vnc-host <host>', 'address the VNC server listens on', '127.0.0.1')
    .option(
      '--vnc-password-file <file>',
      'require VNC Authentication with the password on the first line of FILE (or $RK_VNC_PASSWORD); default: a generated one in ~/.config/retrokube/vnc-password (0600)',
    )
    .option('--vnc-no-password', 'serve VNC without a password (warned; loopback only unless --insecure-vnc)')
    .option(
      '--insecure-vnc',
      'allow --vnc-no-password on a non-loopback --vnc-host (anyone reaching it types into the machine)',
    )
    .option(
      '--screenshot <file.png>',
      'write a PNG of the screen once the machine idles after boot (and --exec); exits unless --vnc/--air/--for',
    )
    .option('--memory <MiB>', 'RAM in MiB with the display placed above it (1-32; default: the board layout)')
    .option(
      '--deterministic',
      'timer from the instruction count (reproducible runs) instead of the wall clock',
    )
    .option('--no-jit', 'interpreter only: do not translate hot RISC5 code to WebAssembly')
    .option('--rom', 'boot with our boot ROM (assembled RISC5 code) instead of the native boot')
    .option('--in-place', 'write to DISK itself instead of a temporary copy')
    .option('--for <seconds>', 'stop after this many seconds')
    .option('--json', 'print the machine state as JSON when it stops')
    .option(
      '--status-file <path>',
      'keep the machine\'s word in this file: a first line "booting: ...", "booted: ...", "trouble: ..." or "stopped: ..." (for a readiness probe), then details',
    )
    .option(
      '--live-commands <file>',
      'after boot, send each new or changed "Kube.Apply name N Module" line of FILE to the serial port (a plane\'s desired deployments; other lines are refused)',
    )
    .option(
      '--live-configmap <namespace/name>',
      'as --live-commands, but the lines are the "deployments" entry of this ConfigMap, watched through the Kubernetes API (in a pod: its ServiceAccount; else KUBECONFIG): an edit arrives in seconds',
    )
    .addHelpText(
      'after',
      `
Examples:
  retrokube machine run Oberon.dsk --screenshot boot.png
  retrokube machine run Oberon.dsk --exec "System.Directory *.Mod" --vnc 5900
  retrokube machine run kube.dsk --air 127.0.0.1:7524 --commands "KubeNet.Join a kube 00c0ffee"
  retrokube machine run kube.dsk --status-file /run/retrokube/status   # then: head -1 /run/retrokube/status
  retrokube machine run kube.dsk --commands "Kube.Start;KubeNet.Serve kube 00c0ffee" --live-commands deployments.txt`,
    )
    .action((disk: string, o: RunOpts) => run(disk, o));
  machine
    .command('payload')
    .description(
      `fill DIR with what a KubeVirt machine boots from: prom.bin (our boot ROM, always rewritten), oberon.dsk (the Kube disk, only when absent; grown to ${PAYLOAD_LIMITS.diskBytes / 1048576} MiB, never shrunk) and the KubeNet key (the fill Job of runtime kubevirt)`,
    )
    .argument('<dir>', 'the machine volume (mounted at /payload in the fill Job)')
    .option(
      '--key-file <file>',
      'the KubeNet key (0-16 hex digits) for the hook; without it any old key is removed',
    )
    .addHelpText('after', '\nExample:\n  retrokube machine payload /payload --key-file /key/key\n')
    .action(async (dir: string, o: { keyFile?: string }) => {
      const key = o.keyFile !== undefined ? readFileSync(o.keyFile, 'utf8') : undefined;
      const r = await fillPayload(dir, {
        key,
        seedDisk: async () => (await buildKubeDisk({})).cachePath,
      });
      process.stdout.write(
        `${dir}: prom.bin written; oberon.dsk ${r.seeded ? 'seeded from the Kube disk' : 'kept'}${r.grown ? ', grown' : ''}; ${r.key ? 'key written' : 'no key'}\n`,
      );
    });
}

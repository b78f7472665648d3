// QEMU under a real libvirt, as in KubeVirt's virt-launcher: our onDefineDomain hook rewrites a
// KubeVirt-shaped domain for a rendered OberonMachine, and real `virsh` defines and starts it on
// a real libvirtd (our risc5-patched build of Debian's libvirt 9.0, qemu/libvirt/build.sh) with
// our qemu-system-risc5 as the emulator. The machine is judged as a user would: libvirt's VNC
// socket (the one virt-handler proxies for `virtctl vnc`) shows Oberon to a real VNC client,
// byte for byte the machine's framebuffer, and its radio's heartbeats reach a test air by the
// Service name the operator renders. Bad input leaves the domain shut off with QEMU's reason.

import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyFromHex } from '../../operator/src/air/kubenet.ts';
import { type Listener, startListener } from '../../operator/src/air/listen.ts';
import { type Relay, startRelay } from '../../operator/src/air/relay.ts';
import type { FrameRecord } from '../../operator/src/air/view.ts';
import {
  descriptor,
  machineSettings,
  type OberonMachine,
} from '../../operator/src/controllers/oberonmachine-render.ts';
import { titleBars } from '../../operator/src/machine/screen-scan.ts';
import { kubeDisk } from '../e2e/kube-harness.ts';
import { HOOK, kubevirtDomain } from './kubevirt-domain.ts';
import { createNetns, type Libvirtd, libvirtBuild, type Netns, startLibvirtd } from './libvirt-harness.ts';
import { LIMITS as H, requireQemu, snapshotOf, until, writeProm } from './qemu-harness.ts';

const LIMITS = {
  bootDeadlineMs: 120_000, // boot to Oberon.Loop takes < 1 s of host time; 2 shared cores
  heardDeadlineMs: 60_000, // the first heartbeat follows Join within a second when not starved
  systemTrackX0: 660, // inside the system track (x ≥ 640) of Oberon's standard layout
  screenTries: 10, // the screen may change between the VNC picture and the memory read (log lines)
} as const;

const KEY = '0123456789abcdef';
const DOMAIN = 'lab_oberon-node1';
const qemu = requireQemu();
const build = libvirtBuild();
const isRoot = process.getuid?.() === 0;
// Under CI the build and root are required: a missing one fails the suite instead of hiding it.
if (process.env.CI === 'true' && qemu !== null && (build.prefix === null || !isRoot))
  throw new Error(build.reason || 'the libvirt test needs root (network namespace, user namespace)');
const suite = qemu === null || build.prefix === null || !isRoot ? describe.skip : describe.sequential;

const node: OberonMachine = {
  apiVersion: 'retrokube.io/v1alpha1',
  kind: 'OberonMachine',
  metadata: { name: 'node1', namespace: 'lab', uid: 'u3' },
  spec: {
    role: 'node',
    nodeName: 'n1',
    cluster: 'kube',
    air: 'lab',
    keySecretRef: { name: 'kube-key', key: 'key' },
  },
};

suite('the hook’s domain on a real libvirtd with virsh', () => {
  let dir: string;
  let netns: Netns;
  let relay: Relay;
  let listener: Listener;
  let lv: Libvirtd;
  let vncBridge: Server;
  const records: FrameRecord[] = [];

  /** The hook's domain for a machine whose files are in `payload` (a KubeVirt volume). */
  const hookDomain = (payload: string, change: (d: Record<string, unknown>) => void = () => {}) => {
    const d = descriptor(machineSettings(node));
    d.domain = { ...(d.domain as object), emulator: qemu };
    d.payload = { ...(d.payload as object), path: payload };
    d.air = { ...(d.air as object), port: relay.address.port };
    change(d);
    const vmi = { metadata: { annotations: { 'paleocomputing.io/machine': JSON.stringify(d) } } };
    // In the "pod's" network, as the sidecar runs in the launcher pod: the hook waits until the
    // relay's name resolves there.
    const r = spawnSync(
      'ip',
      [
        'netns',
        'exec',
        netns.name,
        'python3',
        HOOK,
        '--vmi',
        JSON.stringify(vmi),
        '--domain',
        kubevirtDomain(join(dir, 'virt-vnc')),
      ],
      { encoding: 'utf8' },
    );
    if (r.status !== 0) throw new Error(`hook refused: ${r.stderr}`);
    return r.stdout;
  };

  const payloadWith = async (name: string, disk: Buffer) => {
    const p = join(dir, name);
    execFileSync('mkdir', ['-p', p]);
    writeProm(p);
    writeFileSync(join(p, 'oberon.dsk'), disk);
    writeFileSync(join(p, 'key'), `${KEY}\n`);
    return p;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'retrokube-libvirt-'));
    netns = createNetns({ 'rk-air-lab': 'host' });
    relay = await startRelay({ port: 0, bind: netns.hostAddress, rate: null });
    listener = await startListener({
      host: netns.hostAddress,
      port: relay.address.port,
      cluster: 'kube',
      key: keyFromHex(KEY),
      output: 'none',
      onRecord: (r) => records.push(r),
    });
    lv = await startLibvirtd({
      prefix: build.prefix as string,
      qemuDir: dirname(qemu as string),
      dir: join(dir, 'libvirt'),
      netns: netns.name,
    });
  }, 60_000);

  afterAll(async () => {
    lv?.tryVirsh('destroy', DOMAIN);
    await lv?.stop();
    vncBridge?.close();
    await listener?.close();
    await relay?.close();
    netns?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('libvirt knows the risc5 architecture and its oberon machine from our QEMU', () => {
    const caps = lv.virsh('capabilities');
    expect(caps).toMatch(/<arch name='risc5'>[\s\S]*?<machine[^>]*>oberon<\/machine>/);
    expect(caps).toContain(`<emulator>${qemu}</emulator>`);
  });

  it('virsh defines and starts the domain; it boots, its VNC shows Oberon, its radio reaches the air', async () => {
    const payload = await payloadWith('payload', readFileSync(await kubeDisk()));
    const xml = join(dir, 'domain.xml');
    writeFileSync(xml, hookDomain(payload));
    lv.virsh('define', xml);
    try {
      await bootsAndShows();
    } finally {
      lv.tryVirsh('destroy', DOMAIN);
      lv.tryVirsh('undefine', DOMAIN);
    }
  });

  async function bootsAndShows() {
    const started = Date.now();
    lv.virsh('start', DOMAIN);
    expect(lv.virsh('domstate', DOMAIN).trim()).toBe('running');

    // Booted: the board's own property, read through libvirt's QEMU monitor.
    const qmp = (cmd: object) =>
      JSON.parse(lv.virsh('qemu-monitor-command', DOMAIN, JSON.stringify(cmd))) as { return: unknown };
    await until(
      'Oberon.Loop',
      async () =>
        qmp({ execute: 'qom-get', arguments: { path: '/machine', property: 'booted' } }).return === true,
      LIMITS.bootDeadlineMs,
    );
    const bootMs = Date.now() - started;

    // The radio: node n1's kubelet heartbeats, signed with the key from the volume, heard on the air.
    const beat = await until(
      'a heartbeat of n1 on the air',
      async () => records.find((r) => r.kind === 'heartbeat' && r.node === 'n1' && r.verdict === 'ok'),
      LIMITS.heardDeadlineMs,
    );
    expect(beat.auth).toBe(true);

    // The screen through libvirt's VNC socket (a TCP bridge to it, as virt-handler's proxy is),
    // to vncsnapshot, compared with the framebuffer in the machine's memory.
    vncBridge = createServer((c) => {
      const u = createConnection(join(dir, 'virt-vnc'));
      c.pipe(u).pipe(c);
      u.on('error', () => c.destroy());
      c.on('error', () => u.destroy());
    });
    await new Promise<void>((ok) => vncBridge.listen(0, '127.0.0.1', ok));
    const port = (vncBridge.address() as { port: number }).port;
    let differ = -1;
    let fb = Buffer.alloc(0);
    for (let i = 0; i < LIMITS.screenTries && differ !== 0; i++) {
      const jpg = join(dir, `vnc-${i}.jpg`);
      // Asynchronous: the bridge to libvirt's socket runs in this process's event loop.
      await promisify(execFile)('vncsnapshot', ['-quality', '100', `127.0.0.1::${port}`, jpg]);
      const pgm = execFileSync('djpeg', ['-pnm', '-grayscale', jpg]);
      const header = 'P5\n1024 768\n255\n';
      expect(pgm.subarray(0, header.length).toString('latin1')).toBe(header);
      const pixels = pgm.subarray(header.length);
      const file = join(dir, `fb-${i}.bin`);
      qmp({ execute: 'pmemsave', arguments: { val: H.displayStart, size: H.displayBytes, filename: file } });
      fb = readFileSync(file);
      differ = 0;
      for (let yTop = 0; yTop < 768; yTop++) {
        const line = 767 - yTop;
        for (let x = 0; x < 1024; x++) {
          const bit = (fb[line * 128 + (x >>> 3)] >>> (x & 7)) & 1;
          if (bit !== (pixels[yTop * 1024 + x] > 128 ? 1 : 0)) differ++;
        }
      }
    }
    expect(differ).toBe(0);
    // Oberon's screen: the system track's viewers (System.Log, System.Tool), each under its title bar.
    expect(titleBars(snapshotOf(fb), LIMITS.systemTrackX0, 1016).length).toBeGreaterThanOrEqual(2);
    console.log(`libvirt: booted ${(bootMs / 1000).toFixed(1)} s after virsh start; VNC = framebuffer`);
  }

  describe('bad input leaves the domain shut off, with the reason', () => {
    /**
     * Defines and starts; the reason is what virsh says plus what libvirt wrote to the domain's
     * log (QEMU's stderr; virt-launcher relays the same log): when QEMU exits before libvirt
     * reaches its monitor, virsh itself only says the monitor refused the connection.
     */
    const startRefused = (name: string, xml: string) => {
      const file = join(dir, `${name}.xml`);
      writeFileSync(file, xml);
      lv.virsh('define', file);
      const log = join(lv.dir, 'cache/libvirt/qemu/log', `${DOMAIN}.log`);
      const before = existsSync(log) ? statSync(log).size : 0;
      const r = lv.tryVirsh('start', DOMAIN);
      const state = lv.virsh('domstate', DOMAIN).trim();
      lv.virsh('undefine', DOMAIN);
      const logged = readFileSync(log).subarray(before).toString('utf8');
      return { status: r.status, output: `${r.output}\n${logged}`, state };
    };

    it('a disk that is not an Oberon disk', async () => {
      const payload = await payloadWith('not-oberon', Buffer.alloc(1 << 20, 0x5a));
      const r = startRefused('not-oberon', hookDomain(payload));
      expect(r.status).not.toBe(0);
      expect(r.output).toMatch(/drive sd0 is not an Oberon disk/);
      expect(r.state).toBe('shut off');
    });

    it('a relay name that does not resolve: the hook waits, then refuses; QEMU handed one anyway exits naming it', async () => {
      const payload = await payloadWith('no-relay', readFileSync(await kubeDisk()));
      expect(() =>
        hookDomain(payload, (d) => {
          d.air = { ...(d.air as object), host: 'rk-air-nowhere', resolveWithinSeconds: 1 };
        }),
      ).toThrow(/the relay rk-air-nowhere does not resolve .* after 1 s/);
      // The name can still go between the hook and QEMU's start.
      const xml = hookDomain(payload).replace('host=rk-air-lab,', 'host=rk-air-nowhere,');
      expect(xml).toContain('host=rk-air-nowhere,');
      const r = startRefused('no-relay', xml);
      expect(r.status).not.toBe(0);
      expect(r.output).toMatch(/rk-air-nowhere/);
      expect(r.state).toBe('shut off');
    });
  });
});
